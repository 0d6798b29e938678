/**
 * Usage errors and help a new user meets (docs/operations.md, "Command line"): named value
 * placeholders, a help page per command group, and hints for a missing required option, an
 * unknown option close to a real one and `serve --port`. runCli() in process, streams captured.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { runCli } from '../../../cli/cli.js';

class Sink extends Writable {
  text = '';
  _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

async function run(...argv: string[]) {
  const stdout = new Sink();
  const stderr = new Sink();
  const code = await runCli(argv, { stdout, stderr, env: {} });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

test('usage lines and help pages name option values instead of #0', async () => {
  const all = await run('--help');
  assert.equal(all.code, 0);
  assert.doesNotMatch(all.stdout, /#0/);
  assert.match(all.stdout, /svc import \[--json\] <--collection NAME> .*\[--data-dir DIR\]/);
  assert.match(all.stdout, /svc superuser create \[--json\] <--email EMAIL> <--password PASSWORD>/);
  const one = await run('serve', '--help');
  assert.equal(one.code, 0);
  assert.doesNotMatch(one.stdout, /#0/);
  // the option list stays aligned: every description starts in the same column
  const columns = one.stdout.split('\n').filter((l) => /^ {2}--/.test(l)).map((l) => /^ {2}\S+(?: \S+)* {4,}(?=\S)/.exec(l)![0].length);
  assert.ok(columns.length > 5 && columns.every((c) => c === columns[0]), one.stdout);
  assert.match(one.stdout, /--http HOST:PORT/);
});

test('every command group has a help page listing its commands', async () => {
  for (const [group, commands] of [['superuser', ['create', 'upsert']], ['schema', ['dump', 'apply']], ['migrate', ['status', 'preview']]] as const) {
    for (const flag of ['--help', '-h']) {
      const r = await run(group, flag);
      assert.equal(r.code, 0, `${group} ${flag}: ${r.stderr}`);
      assert.doesNotMatch(r.stdout + r.stderr, /Command not found/);
      for (const c of commands) assert.match(r.stdout, new RegExp(`svc ${group} ${c} `));
    }
  }
  // a group alone is a usage error that still shows the page
  const bare = await run('superuser', '--json');
  assert.equal(bare.code, 1);
  assert.match(bare.stderr, /svc superuser create/);
  assert.deepEqual(JSON.parse(bare.stdout), { error: { code: 'usage', message: 'svc superuser needs a command' } });
  // a command's own help is unchanged
  assert.match((await run('superuser', 'create', '--help')).stdout, /Create the first superuser/);
});

test('a missing required option or argument is named', async () => {
  const r = await run('import', 'cities.csv', '--json');
  assert.equal(r.code, 1);
  assert.doesNotMatch(r.stderr, /Command not found/);
  assert.match(r.stderr, /svc import needs --collection=NAME/);
  assert.match(r.stderr, /\$ svc import .*<--collection NAME>/);
  assert.deepEqual(JSON.parse(r.stdout), { error: { code: 'usage', message: 'svc import needs --collection=NAME' } });
  assert.match((await run('import', '--collection', 'cities')).stderr, /svc import needs FILE/);
  assert.match((await run('superuser', 'create', '--email=a@b.co')).stderr, /needs --password=PASSWORD/);
});

test('an unknown option gets a hint: serve --port, and the close real option', async () => {
  for (const argv of [['serve', '--port', '8080'], ['serve', '--port=8080']]) {
    const r = await run(...argv);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /unknown option --port: .*--http=127\.0\.0\.1:8080/);
  }
  const typo = await run('import', '--colection=cities', 'cities.csv', '--json');
  assert.equal(typo.code, 1);
  assert.match(typo.stderr, /unknown option --colection for svc import; did you mean --collection\?/);
  assert.equal(JSON.parse(typo.stdout).error.code, 'usage');
  assert.match((await run('backup', '--data-dri=x', 'b.tar')).stderr, /did you mean --data-dir\?/);
  // nothing close: no guess
  assert.doesNotMatch((await run('doctor', '--zzzzzzzz')).stderr, /did you mean/);
});
