#!/usr/bin/env node
// The CLI's entry point. It is committed (dist/ is built later, by `prepare`), so that npm can
// link `devdata-client` when it installs the workspace, before the build has run.
await import('../dist/cli.js');
