// The built devdata-client's resources import and export against the real server: CSV and NDJSON
// in batches, the unreadable rows and a refused batch named by their lines, export → import round
// trips, the progress a log and a terminal get, and an import resumed after Ctrl-C or a kill that
// writes nothing twice (a proxy keeps a committed batch's answer back, so the kill lands when the
// server has written it and the CLI does not know).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestAccount, useTestApp } from '../support/app.js';
import { killAll, ROOT, run, scriptAvailable } from '../support/processes.js';
import { until } from '../support/wait.js';
import { LossyProxy, requestTo } from './proxy.js';
import { NodeScript } from './support.js';

const CLIENT_CLI = join(ROOT, 'client', 'bin', 'devdata-client.js');
const BATCH = requestTo('POST', '/api/v1/batch');

afterAll(async () => {
  await killAll();
});

describe('devdata-client resources import and export', () => {
  const app = useTestApp();
  let base: string;
  let directory: string;

  beforeAll(async () => {
    base = await app().listen();
    directory = await mkdtemp(join(tmpdir(), 'devdata-import-'));
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  const path = (name: string) => join(directory, name);

  async function as(account?: TestAccount, url = base) {
    const who = account ?? (await app().account());
    const env = { ...process.env, DEVDATA_URL: url, DEVDATA_API_KEY: who.key };
    return {
      account: who,
      env,
      cli: (...args: string[]) => run(process.execPath, [CLIENT_CLI, ...args], { env }),
      /** The CLI left running, to be interrupted or killed. */
      start: (...args: string[]) => new NodeScript(join('client', 'bin', 'devdata-client.js'), args, env),
      resources: async (): Promise<Array<Record<string, any>>> => {
        const all = [];
        for (let offset = 0; ; ) {
          const page = (await app().request({ url: `/api/v1/resources?limit=500&offset=${offset}`, key: who.key })).json;
          all.push(...page.data);
          if (!page.hasMore) return all;
          offset += page.data.length;
        }
      },
    };
  }

  /** An NDJSON file of `count` new sensors named "Sensor <n>". */
  async function sensors(name: string, count: number): Promise<string> {
    const lines = Array.from({ length: count }, (_, index) => JSON.stringify({ name: `Sensor ${index}`, type: 'sensor', state: index }));
    await writeFile(path(name), `${lines.join('\n')}\n`);
    return path(name);
  }

  const names = (resources: Array<Record<string, any>>) => resources.map((resource) => resource.name);
  const sensorNames = (count: number) => Array.from({ length: count }, (_, index) => `Sensor ${index}`);

  it('imports CSV and NDJSON: creations, updates by id at a version, a summary, progress lines in a log', async () => {
    const { cli, resources } = await as();
    await writeFile(
      path('home.csv'),
      'name,type,state,tags,attributes\r\nHall,sensor,19.5,hall;floor,"{""unit"":""°C""}"\r\nLamp,switch,on,,\r\n"Note, long",text,"Say ""hi""",,\r\n',
    );
    const imported = await cli('resources', 'import', path('home.csv'), '--json');
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ rows: 3, created: 3, updated: 0, skipped: 0, batches: 1 });
    const [hall, lamp, note] = await resources();
    expect(hall).toMatchObject({ name: 'Hall', state: 19.5, tags: ['hall', 'floor'], attributes: { unit: '°C' } });
    expect(lamp).toMatchObject({ name: 'Lamp', type: 'switch', state: true, tags: [] });
    expect(note).toMatchObject({ name: 'Note, long', state: 'Say "hi"' });

    const updates = [
      JSON.stringify({ id: hall!.id, state: 20, version: 1 }),
      JSON.stringify({ id: lamp!.id, name: 'Desk lamp' }),
      JSON.stringify({ name: 'New', type: 'text', state: '' }),
    ];
    await writeFile(path('changes.jsonl'), updates.join('\r\n'));
    const changed = await cli('resources', 'import', path('changes.jsonl'), '--batch-size', '2');
    expect(changed.code, changed.stderr).toBe(0);
    expect(changed.stdout).toBe(`Imported 3 rows from ${path('changes.jsonl')} in 2 batches: 1 created, 2 updated.\n`);
    // Not a terminal: a plain line per batch, on standard error.
    expect(changed.stderr.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(/^2\/3 rows \(66%\), [\d,]+ rows\/s, ETA \d+:\d\d$/),
      expect.stringMatching(/^3\/3 rows \(100%\), [\d,]+ rows\/s, ETA 0:00$/),
    ]);
    expect((await resources()).map((resource) => [resource.name, resource.state, resource.version])).toEqual([
      ['Hall', 20, 2],
      ['Desk lamp', true, 2],
      ['Note, long', 'Say "hi"', 1],
      ['New', '', 1],
    ]);
    // Run again: it was imported, nothing is sent.
    const again = await cli('resources', 'import', path('changes.jsonl'));
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('was imported already');
    expect((await resources()).length).toBe(4);
  });

  it('refuses a batch size beyond 1-1000, a format other than ndjson or csv, a file it cannot read (exit 2, nothing sent)', async () => {
    const { cli, resources } = await as();
    const file = await sensors('usage.ndjson', 3);
    const refusals: Array<[string[], string]> = [
      [['--batch-size', '0'], '--batch-size must be 1-1000, not 0'],
      [['--batch-size', '1001'], '--batch-size must be 1-1000, not 1001'],
      [['--format', 'xml'], '--format must be ndjson or csv, not "xml"'],
    ];
    for (const [args, message] of refusals) {
      const result = await cli('resources', 'import', file, ...args);
      expect([result.code, result.stderr.split('\n')[0]]).toEqual([2, `devdata-client: ${message}`]);
    }
    const missing = await cli('resources', 'import', path('nowhere.csv'));
    expect([missing.code, missing.stderr.split('\n')[0]]).toEqual([2, `devdata-client: cannot read ${path('nowhere.csv')}: ENOENT`]);
    expect((await cli('resources', 'export', '--format', 'xml')).code).toBe(2);
    expect(await resources()).toEqual([]);
  });

  it('lists the rows that cannot be read by line and sends nothing, unless --skip-invalid', async () => {
    const { cli, resources } = await as();
    await writeFile(path('bad.csv'), 'name,type,state\nGood,text,x\nLamp,switch,maybe\nNo type,,1\n"Open,text,x\n');
    const refused = await cli('resources', 'import', path('bad.csv'));
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${path('bad.csv')}:3: state: a switch takes on or off (true/false), not "maybe"\n`);
    expect(refused.stderr).toContain(`${path('bad.csv')}:4: a state needs the type`);
    expect(refused.stderr).toContain(`${path('bad.csv')}:5: a quoted cell is not closed`);
    expect(refused.stderr).toContain('3 of 4 rows cannot be read: nothing was sent');
    expect(await resources()).toEqual([]);

    const skipped = await cli('resources', 'import', path('bad.csv'), '--skip-invalid', '--json');
    expect(skipped.code, skipped.stderr).toBe(0);
    expect(JSON.parse(skipped.stdout)).toMatchObject({ rows: 1, created: 1, skipped: 3 });
    expect(names(await resources())).toEqual(['Good']);
  });

  it('names the line of a refused row, keeps what the batches before it wrote, and goes on once the file is corrected', async () => {
    const { cli, resources } = await as();
    const rows = Array.from({ length: 7 }, (_, index) => JSON.stringify({ name: `Row ${index}`, type: 'text', state: `${index}` }));
    rows.splice(4, 0, JSON.stringify({ id: 'res_gone', state: 'x' }));
    await writeFile(path('refused.ndjson'), `${rows.join('\n')}\n`);
    const refused = await cli('resources', 'import', path('refused.ndjson'), '--batch-size', '3');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${path('refused.ndjson')}:5: Resource not found`);
    expect(refused.stderr).toMatch(
      /not_found: .*The row at line 5 was refused, so none of lines 4-6 was written \(batch 2 of 3\); 3 of 8 rows were imported before them/,
    );
    expect(names(await resources())).toEqual(['Row 0', 'Row 1', 'Row 2']);

    rows.splice(4, 1);
    await writeFile(path('refused.ndjson'), `${rows.join('\n')}\n`);
    // The rows not yet written are split anew, here in batches of another size.
    const resumed = await cli('resources', 'import', path('refused.ndjson'), '--batch-size', '2', '--json');
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('Resuming: 3 of 7 rows were imported before');
    expect(JSON.parse(resumed.stdout)).toMatchObject({ rows: 7, created: 7, batches: 3, importedBefore: 3 });
    expect(names(await resources())).toEqual(rows.map((row) => JSON.parse(row).name));
  });

  it('exports NDJSON and CSV that import back: as updates of the same resources, or with --no-ids as new ones elsewhere', async () => {
    const source = await as();
    await writeFile(
      path('mixed.ndjson'),
      [
        { name: 'Kitchen', type: 'sensor', state: 21.5, tags: ['kitchen', 'a;b'], attributes: { unit: '°C', nested: { x: [1, 2] } } },
        { name: 'Door', type: 'binary_sensor', state: false, tags: [] },
        { name: 'Text, "quoted"\nno', type: 'text', state: 'line one\nline two, "two"' },
        { name: 'Fan', type: 'switch', state: true, tags: ['[x'] },
        { name: 'Code', type: 'sensor', state: 'warm' },
      ]
        .map((row) => JSON.stringify({ ...row, name: row.name.replace('\n', ' ') }))
        .join('\n'),
    );
    expect((await source.cli('resources', 'import', path('mixed.ndjson'))).code).toBe(0);
    const original = await source.resources();
    const fields = (list: Array<Record<string, any>>) => list.map(({ name, type, state, attributes, tags }) => ({ name, type, state, attributes, tags }));

    for (const format of ['csv', 'ndjson']) {
      const copy = path(`copy.${format}`);
      const exported = await source.cli('resources', 'export', '--output', copy, '--no-ids');
      expect(exported.stdout).toBe(`Exported 5 resources to ${copy} (${format}).\n`);
      const target = await as();
      const imported = await target.cli('resources', 'import', copy);
      expect(imported.code, imported.stderr).toBe(0);
      expect(fields(await target.resources())).toEqual(fields(original));
    }

    // With ids and versions: an edited file updates the same resources, each at the version it had.
    const edited = path('edit.csv');
    expect((await source.cli('resources', 'export', '--format', 'csv', '--output', edited)).code).toBe(0);
    const text = await readFile(edited, 'utf8');
    expect(text.split('\r\n')[0]).toBe('id,name,type,state,tags,attributes,version');
    await writeFile(edited, text.replace('Fan,switch,true', 'Fan,switch,off'));
    const updated = await source.cli('resources', 'import', edited, '--json');
    expect(JSON.parse(updated.stdout)).toMatchObject({ created: 0, updated: 5 });
    const after = await source.resources();
    expect(after.map((resource) => resource.id)).toEqual(original.map((resource) => resource.id));
    expect(after.map((resource) => resource.version)).toEqual([2, 2, 2, 2, 2]);
    expect(fields(after)).toEqual(fields(original).map((resource) => (resource.name === 'Fan' ? { ...resource, state: false } : resource)));
    // The same file again: each row's version is stale now, refused with 412 at its line, nothing written.
    await rm(`${edited}.import-state.json`);
    const stale = await source.cli('resources', 'import', edited);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/precondition_failed: .*The row at line 2 was refused/);

    // Filters, to standard output.
    const switches = await source.cli('resources', 'export', '--type', 'switch', '--format', 'csv', '--no-ids');
    expect(switches.stdout).toBe('name,type,state,tags,attributes\r\nFan,switch,false,"[""[x""]",{}\r\n');
    expect(switches.stderr).toBe('Exported 1 resources.\n');
    const tagged = await source.cli('resources', 'export', '--tag', 'kitchen');
    expect(
      tagged.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).name),
    ).toEqual(['Kitchen']);
  });

  it('resumes after a kill while a written batch was unacknowledged: the batch is replayed, nothing is written twice', async () => {
    const proxy = new LossyProxy();
    const through = await proxy.start(base);
    try {
      const viaProxy = await as(undefined, through);
      const file = await sensors('killed.ndjson', 5_000);
      // The third batch reaches the server, which writes it; its answer never reaches the CLI.
      proxy.hold(BATCH, 2);
      const first = viaProxy.start('resources', 'import', file);
      await until(() => proxy.of(BATCH).some((exchange) => exchange.outcome === 'held'), 'the third batch written and held back');
      first.child.kill('SIGKILL');
      await first.exited;
      const held = proxy.of(BATCH).find((exchange) => exchange.outcome === 'held')!;
      expect(held).toMatchObject({ status: 200, replayed: false });
      expect((await viaProxy.resources()).length).toBe(3_000);

      const rerun = await as(viaProxy.account, through);
      const resumed = await rerun.cli('resources', 'import', file);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stderr).toContain('Resuming: 2,000 of 5,000 rows were imported before');
      const sent = proxy.of(BATCH).slice(3);
      expect(sent.map((exchange) => [exchange.key === held.key, exchange.replayed])).toEqual([
        [true, true],
        [false, false],
        [false, false],
      ]);
      expect(names(await viaProxy.resources())).toEqual(sensorNames(5_000));
    } finally {
      await proxy.close();
    }
  });

  it('stops at Ctrl-C with exit code 130 and resumes where it stopped; a kill at any moment loses nothing either', async () => {
    const proxy = new LossyProxy();
    const through = await proxy.start(base);
    try {
      const caller = await as(undefined, through);
      const file = await sensors('interrupted.ndjson', 3_000);
      proxy.hold(BATCH, 1);
      const first = caller.start('resources', 'import', file);
      await until(() => proxy.of(BATCH).some((exchange) => exchange.outcome === 'held'), 'the second batch written and held back');
      expect(await first.interrupt()).toBe(130);
      expect(first.stderr).toContain('stopped: 1,000 of 3,000 rows were imported; run the same command again to resume');
      expect((await caller.cli('resources', 'import', file)).code).toBe(0);
      expect(names(await caller.resources())).toEqual(sensorNames(3_000));
    } finally {
      await proxy.close();
    }

    // A larger file killed wherever it happens to be, then again, then run to its end.
    const caller = await as();
    const file = await sensors('large.ndjson', 20_000);
    for (const progressLines of [2, 12]) {
      const run = caller.start('resources', 'import', file, '--batch-size', '500');
      await until(() => run.stderr.split('\n').length > progressLines, `${progressLines} progress lines\n${run.stderr}`);
      run.child.kill('SIGKILL');
      await run.exited;
    }
    const last = await caller.cli('resources', 'import', file, '--batch-size', '500');
    expect(last.code, last.stderr).toBe(0);
    expect(last.stderr).toMatch(/Resuming: [\d,]+ of 20,000 rows were imported before/);
    expect(names(await caller.resources())).toEqual(sensorNames(20_000));
  });

  it.skipIf(!scriptAvailable)('draws a progress bar in place on a terminal: done/total, rate and time left', async () => {
    const { account } = await as();
    const file = await sensors('terminal.ndjson', 1_500);
    const shown = await run('script', ['-qec', `exec '${process.execPath}' '${CLIENT_CLI}' resources import '${file}' --batch-size 500`, '/dev/null'], {
      env: { ...process.env, SHELL: '/bin/sh', DEVDATA_URL: base, DEVDATA_API_KEY: account.key },
    });
    expect(shown.code, shown.stdout).toBe(0);
    const redraws = shown.stdout.split('\r\u001b[2K').slice(1);
    expect(redraws[0]).toMatch(/^\[\.{24}\] {3}0% {2}0\/1,500 rows {2}0\/s {2}ETA \?/);
    expect(redraws.at(-1)).toMatch(/^\[#{24}\] 100% {2}1,500\/1,500 rows {2}[\d,]+\/s {2}ETA 0:00\r?\n/);
    expect(redraws).toHaveLength(4);
    expect(shown.stdout).toContain('Imported 1,500 rows');
  });
});
