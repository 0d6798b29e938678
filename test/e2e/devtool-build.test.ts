/**
 * `devtool build [DIR]` run as a real process (0-conventions.md, "Static files and the devtool
 * site"): Markdown with front matter, layouts, components, assets, the URL prefix, stale output,
 * errors that name the file and line, and the starter site in examples/site/.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/server.js';
import { cleanupSites, devtool, makeSite, STARTER } from '../helpers/devtool.js';

after(cleanupSites);

const out = (site: string, rel: string): string => readFileSync(join(site, '.svc', 'site', rel), 'utf8');

test('builds pages through layouts and components, copies assets, prints a summary', async () => {
  const site = makeSite({
    ...STARTER,
    'content/guide/index.md': '---\ntitle: Guide\nlayout: plain\n---\n## Steps\n\n| a | b |\n|---|---|\n| 1 | 2 |\n',
    'content/guide/install.md': '---\ntitle: "Install <now>"\nauthor: Ada\n---\nBy {{ not processed in markdown }}.\n',
    'layouts/default.html': '<html><head><title>{{ title }}</title></head><body data-author="{{ page.author }}">{{> nav }}{{ content }}</body></html>',
    'assets/img/logo.svg': '<svg/>',
  });
  const r = await devtool(['build'], { cwd: site });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Built 4 pages and 2 assets into .*\.svc\/site in \d+ ms\n$/);
  const index = out(site, 'index.html');
  assert.match(index, /<title>Home<\/title>/);
  assert.match(index, /<h1>Welcome<\/h1>\n<p>Hello <em>world<\/em>.<\/p>/);
  assert.match(index, /<nav><a href="\/">home<\/a>/, 'the component is included');
  assert.match(out(site, 'about/index.html'), /About page\./);
  const guide = out(site, 'guide/index.html');
  assert.match(guide, /^<html><body class="plain">/, 'layout from front matter');
  assert.match(guide, /<table>/, 'GitHub-flavoured tables');
  const install = out(site, 'guide/install/index.html');
  assert.match(install, /<title>Install &lt;now&gt;<\/title>/, 'title escaped');
  assert.match(install, /data-author="Ada"/, 'front matter keys as page.KEY');
  assert.match(install, /By \{\{ not processed in markdown \}\}/, 'placeholders in content are left alone');
  assert.equal(out(site, 'assets/app.css'), 'body { color: black; }\n');
  assert.equal(out(site, 'assets/img/logo.svg'), '<svg/>');
  assert.doesNotMatch(index, /data-devtool-live-reload/, 'a plain build has no live-reload snippet');

  const j = await devtool(['build', site, '--json', '--data-dir=elsewhere']);
  assert.equal(j.code, 0, j.stderr);
  const body = JSON.parse(j.stdout);
  assert.equal(body.pages, 4);
  assert.equal(body.assets, 2);
  assert.equal(body.out_dir, join(site, 'elsewhere', 'site'));
  assert.ok(existsSync(join(site, 'elsewhere', 'site', 'index.html')), '--data-dir is resolved against the site');
});

test('a URL prefix puts every root-relative link and asset under it; the output has no prefix folder', async () => {
  const site = makeSite({ ...STARTER, 'site.json': '{"title": "P", "base": "/docs/v1"}', 'content/index.md': '---\ntitle: Home\n---\n[about](/about/) and [ext](https://example.com/) ![i](/assets/i.png)\n', 'layouts/default.html': '<html><body><a href="{{ base }}x/">x</a><script src="/assets/app.js"></script>{{ content }}{{> nav }}</body></html>' });
  const r = await devtool(['build', '--json'], { cwd: site });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).base, '/docs/v1/');
  const html = out(site, 'index.html');
  assert.match(html, /href="\/docs\/v1\/about\/"/);
  assert.match(html, /src="\/docs\/v1\/assets\/i.png"/);
  assert.match(html, /src="\/docs\/v1\/assets\/app.js"/);
  assert.match(html, /href="\/docs\/v1\/x\/"/, '{{ base }} is not prefixed twice');
  assert.match(html, /href="https:\/\/example.com\/"/);
  assert.match(html, /<a href="\/docs\/v1\/">home<\/a>/);
  assert.ok(!existsSync(join(site, '.svc', 'site', 'docs')));
  const flag = await devtool(['build', '--url-prefix=/alt/'], { cwd: site });
  assert.equal(flag.code, 0, flag.stderr);
  assert.match(out(site, 'index.html'), /href="\/alt\/about\/"/, '--url-prefix overrides site.json');
});

test('a missing site directory is an error', async () => {
  const r = await devtool(['build', '/nonexistent/site/dir']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /site directory \/nonexistent\/site\/dir does not exist/);
  const d = await devtool(['dev', '/nonexistent/site/dir']);
  assert.equal(d.code, 1);
});

test('a rebuild removes output whose source is gone', async () => {
  const site = makeSite();
  assert.equal((await devtool(['build'], { cwd: site })).code, 0);
  assert.ok(existsSync(join(site, '.svc', 'site', 'about', 'index.html')));
  rmSync(join(site, 'content', 'about.md'));
  rmSync(join(site, 'assets', 'app.css'));
  const r = await devtool(['build'], { cwd: site });
  assert.equal(r.code, 0);
  assert.ok(!existsSync(join(site, '.svc', 'site', 'about')));
  assert.ok(!existsSync(join(site, '.svc', 'site', 'assets')));
  assert.ok(existsSync(join(site, '.svc', 'site', 'index.html')));
});

test('build errors name the file and the line', async () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ 'content/a.md': '---\ntitle: ok\nlayout: nope\n---\nx' }, /^devtool: content\/a\.md:3: unknown layout "nope"/m],
    [{ 'content/a.md': '---\ntitle: [unclosed\n---\nx' }, /^devtool: content\/a\.md:\d+: invalid front matter/m],
    [{ 'content/a.md': '---\ntitle: 5\n---\nx' }, /^devtool: content\/a\.md:2: front matter "title" must be a string/m],
    [{ 'content/a.md': '---\ntitle: x\nno end' }, /^devtool: content\/a\.md:1: front matter is not closed/m],
    [{ 'layouts/default.html': '<html>\n<body>\n{{> missing }}\n</body></html>' }, /^devtool: layouts\/default\.html:3: unknown component "missing"/m],
    [{ 'layouts/default.html': '<html>\n\n{{ content }}{{ nonsense }}' }, /^devtool: layouts\/default\.html:3: unknown placeholder "\{\{ nonsense \}\}"/m],
    [{ 'layouts/default.html': '<html>\n{{ content }\n' }, /^devtool: layouts\/default\.html:2: unclosed "\{\{"/m],
    [{ 'components/nav.html': '<nav>\n{{> nav }}</nav>' }, /^devtool: components\/nav\.html:2: component cycle: nav > nav/m],
    [{ 'site.json': '{\n  "title": "x",\n  "base": 3\n}' }, /^devtool: site\.json:3: "base" must be a string/m],
    [{ 'site.json': '{\n  "title": "x",\n}' }, /^devtool: site\.json:\d+: invalid JSON/m],
  ];
  for (const [files, re] of cases) {
    const site = makeSite({ ...STARTER, ...files });
    const r = await devtool(['build'], { cwd: site });
    assert.equal(r.code, 1, `${JSON.stringify(files)}: ${r.stdout}`);
    assert.match(r.stderr, re);
  }
  const site = makeSite({ ...STARTER, 'content/b.md': '---\nlayout: gone\n---\n' });
  const j = await devtool(['build', '--json'], { cwd: site });
  assert.equal(j.code, 1);
  const err = JSON.parse(j.stdout).error;
  assert.equal(err.code, 'build');
  assert.equal(err.file, 'content/b.md');
  assert.equal(err.line, 2);
});

test('the starter site in examples/site builds', async () => {
  const site = makeSite({});
  const r = await devtool(['build', join(ROOT, 'examples', 'site'), `--data-dir=${join(site, 'data')}`]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Built \d+ pages and \d+ asset/);
  const index = readFileSync(join(site, 'data', 'site', 'index.html'), 'utf8');
  assert.match(index, /<link rel="stylesheet" href="\/assets\/style.css">/);
  assert.ok(existsSync(join(site, 'data', 'site', 'guide', 'index.html')));
});
