/**
 * Entry point of `devtool` (bin/devtool.js imports this from dist, or from source through tsx).
 * Exits with the command's code once stdout has drained.
 */
import { runCli } from './cli.js';

const code = await runCli(process.argv.slice(2));
process.exitCode = code;
process.stdout.write('', () => process.exit(code));
