// The server's memory allocator in a run: the system's (glibc's malloc), or jemalloc preloaded as
// docs/operating.md ("Memory: jemalloc") shows. glibc keeps the memory freed between chunks still
// in use, so after load the server's RSS stays well above what it holds (bench/HISTORY.md,
// "Long runs").
import { existsSync, readFileSync } from 'node:fs';

export const ALLOCATORS = ['system', 'jemalloc'] as const;
export type Allocator = (typeof ALLOCATORS)[number];

/** Where Debian's libjemalloc2 (and other distributions' jemalloc) put the library. */
export const JEMALLOC_PATHS = [
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
  '/usr/lib/libjemalloc.so.2',
];

/** The jemalloc library on this machine, or undefined. */
export function findJemalloc(): string | undefined {
  return JEMALLOC_PATHS.find((path) => existsSync(path));
}

/** What the server's environment needs for `allocator`: LD_PRELOAD for jemalloc. */
export function allocatorEnv(allocator: Allocator): NodeJS.ProcessEnv {
  if (allocator === 'system') return {};
  const library = findJemalloc();
  if (!library) throw new Error(`--allocator jemalloc: no libjemalloc.so.2 in ${JEMALLOC_PATHS.join(', ')} (Debian: apt-get install libjemalloc2)`);
  return { LD_PRELOAD: library };
}

/** Throws unless the process runs on `allocator` (a library that could not be preloaded is only warned about by ld.so). */
export function checkAllocator(pid: number, allocator: Allocator): void {
  const jemalloc = readFileSync(`/proc/${pid}/maps`, 'utf8').includes('libjemalloc');
  if (jemalloc !== (allocator === 'jemalloc')) throw new Error(`the server runs ${jemalloc ? 'with' : 'without'} jemalloc, but --allocator is ${allocator}`);
}
