// The console is built into dist/ and served by the service at /console (src/areas/console/).
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/console/',
  // JSX for Preact by the built-in transform: no Babel and no framework plugin.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // Every asset a file of its own: the page's CSP allows no data: URLs.
    assetsInlineLimit: 0,
    // Browsers the console supports all know modulepreload.
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
});
