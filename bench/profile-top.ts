// Summarizes a V8 CPU profile (node --cpu-prof): where the time went, by function (self and
// inclusive) and by file or package. Usage: node .bench-build/bench/profile-top.js FILE.cpuprofile [N]
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Entry {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  totalMs: number;
  idleMs: number;
  selfByFunction: Entry[];
  inclusiveByFunction: Entry[];
  selfByFile: Entry[];
}

function shortUrl(url: string): string {
  if (url === '') return '(native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    const pkg = rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
    return `${pkg}/${rest.slice(rest[0]?.startsWith('@') ? 2 : 1).join('/')}`;
  }
  const dist = url.lastIndexOf('/dist/');
  if (dist !== -1) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

function fileGroup(url: string): string {
  if (url === '') return '(native / GC / idle)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules !== -1) {
    const rest = url.slice(modules + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return shortUrl(url);
}

function top(map: Map<string, number>, totalMs: number, count: number): Entry[] {
  return [...map.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, ms]) => ({ name, ms: Math.round(ms), share: totalMs > 0 ? ms / totalMs : 0 }));
}

export function summarizeProfile(profile: CpuProfile, count = 20): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // Each sample counts for the nominal interval (the median gap between samples), not for the gap
  // that follows it: on a shared machine a descheduled thread leaves long gaps, and charging them to
  // the function that happened to be running (often a syscall such as writev) would distort the view.
  const sortedDeltas = deltas.slice(1).sort((a, b) => a - b);
  const intervalMs = (sortedDeltas[Math.floor(sortedDeltas.length / 2)] ?? 1000) / 1000;
  const selfMs = new Map<number, number>();
  for (const id of samples) selfMs.set(id, (selfMs.get(id) ?? 0) + intervalMs);
  const key = (node: ProfileNode) =>
    `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ''}`;

  let totalMs = 0;
  let idleMs = 0;
  const selfByFunction = new Map<string, number>();
  const selfByFile = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, ms] of selfMs) {
    const node = byId.get(id);
    if (!node) continue;
    const name = node.callFrame.functionName;
    if (name === '(idle)' || name === '(program)') {
      idleMs += name === '(idle)' ? ms : 0;
      if (name === '(idle)') continue;
    }
    totalMs += ms;
    selfByFunction.set(key(node), (selfByFunction.get(key(node)) ?? 0) + ms);
    const group = name === '(garbage collector)' ? '(garbage collector)' : fileGroup(node.callFrame.url);
    selfByFile.set(group, (selfByFile.get(group) ?? 0) + ms);
    // Inclusive: every distinct function on the stack gets the sample once.
    const seen = new Set<string>();
    for (let current: number | undefined = id; current !== undefined; current = parent.get(current)) {
      const frame = byId.get(current);
      if (!frame || frame.callFrame.functionName === '(root)') continue;
      const frameKey = key(frame);
      if (seen.has(frameKey)) continue;
      seen.add(frameKey);
      inclusive.set(frameKey, (inclusive.get(frameKey) ?? 0) + ms);
    }
  }
  return {
    totalMs: Math.round(totalMs),
    idleMs: Math.round(idleMs),
    selfByFunction: top(selfByFunction, totalMs, count),
    inclusiveByFunction: top(inclusive, totalMs, count),
    selfByFile: top(selfByFile, totalMs, count),
  };
}

export function formatSummary(summary: ProfileSummary): string {
  const lines = [`on CPU ${summary.totalMs} ms, idle ${summary.idleMs} ms (samples × the sampling interval)`];
  const section = (title: string, entries: Entry[]) => {
    lines.push('', title);
    for (const entry of entries) lines.push(`  ${(entry.share * 100).toFixed(1).padStart(5)}%  ${String(entry.ms).padStart(7)} ms  ${entry.name}`);
  };
  section('Self time by function:', summary.selfByFunction);
  section('Self time by package / file:', summary.selfByFile);
  section('Inclusive time by function:', summary.inclusiveByFunction);
  return lines.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, count] = process.argv.slice(2);
  if (!file) {
    console.error('Usage: node .bench-build/bench/profile-top.js FILE.cpuprofile [N]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  console.log(formatSummary(summarizeProfile(profile, count ? Number(count) : 25)));
}
