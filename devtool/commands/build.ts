/**
 * `devtool build [DIR]`: builds the site in DIR (default the current directory) once into
 * `<data dir>/site/` (docs/devtool.md). A bad source fails
 * with `file:line: reason` (exit 1; under --json `{error: {code: "build", message, file, line}}`).
 */
import { Command, Option } from 'clipanion';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { DevtoolCommand } from '../base-command.js';
import { BuildError } from '../errors.js';
import { loadSiteConfig } from '../site.js';

export class BuildCommand extends DevtoolCommand {
  static paths = [['build']];
  static usage = Command.Usage({
    description: 'Build the site once',
    details: 'Renders content/**/*.md through layouts/ and components/, copies assets/, and writes the result to .svc/site/ (or <data dir>/site/).',
    examples: [['Build the starter site', '$0 build examples/site']],
  });

  dir = Option.String({ required: false, name: 'DIR' });
  urlPrefix = Option.String('--url-prefix', { description: 'URL prefix of the site (overrides site.json "base")' });

  protected async run(): Promise<number> {
    const siteDir = resolve(this.dir ?? '.');
    if (!existsSync(siteDir) || !statSync(siteDir).isDirectory()) return this.fail('site', `the site directory ${siteDir} does not exist`);
    const paths = this.dataPaths(siteDir);
    try {
      const config = loadSiteConfig(siteDir, this.urlPrefix);
      const { SiteBuilder } = await import('../build.js');
      const r = await new SiteBuilder({ config, outDir: paths.out }).build();
      this.emit(
        { pages: r.pages, assets: r.assets, written: r.written, removed: r.removed, out_dir: paths.out, base: config.base, duration_ms: r.durationMs },
        `Built ${r.pages} page${r.pages === 1 ? '' : 's'} and ${r.assets} asset${r.assets === 1 ? '' : 's'} into ${paths.out} in ${r.durationMs} ms`,
      );
      return 0;
    } catch (err) {
      if (err instanceof BuildError) return this.fail('build', err.message, { file: err.file, line: err.line });
      throw err;
    }
  }
}
