/**
 * `svc version [--json]` (docs/operations.md, "Command line"). Prints the product version, commit,
 * build time, target, Node.js version, component versions and the HTTP engine; the JSON object is
 * `versionInfo()` itself (first key `svc`). Always exits 0 and never
 * validates SERVICE_LOG_* (a malformed value must not hide the version).
 */
import { Command } from 'clipanion';
import { SvcCommand } from '../base-command.js';
import { versionInfo, type VersionInfo } from '../../src/meta/version-info.js';

/** The text form: one summary line, the build time, then one line per component. */
export function formatVersionText(v: VersionInfo): string {
  const width = Math.max(...Object.keys(v.components).map((k) => k.length));
  const lines = [
    `svc ${v.svc} (commit ${v.commit}, node ${v.node}, ${v.target})`,
    `built ${v.build}`,
    'components:',
    ...Object.entries(v.components).map(([name, version]) => `  ${name.padEnd(width)}  ${version}`),
    v.http.engine === 'uws' ? `http engine: uWebSockets.js (${v.http.package} ${v.http.version})` : `http engine: node:http (${v.http.reason})`,
  ];
  return lines.join('\n');
}

export class VersionCommand extends SvcCommand {
  static paths = [['version']];
  static usage = Command.Usage({
    description: 'Print the version, build and component versions',
    examples: [
      ['Print the version', '$0 version'],
      ['Print it as one JSON object', '$0 version --json'],
    ],
  });

  protected async run(): Promise<number> {
    const info = versionInfo();
    this.emit(info, formatVersionText(info));
    return 0;
  }
}
