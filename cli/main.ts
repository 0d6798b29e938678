/**
 * Entry point of `svc` (bin/svc.js imports this from dist, or from source through tsx).
 * Exits with the command's code once stdout has drained; an explicit exit because a stopped
 * server may leave handles (worker pools, database connections) that would keep Node alive.
 */
import { runCli } from './cli.js';

const code = await runCli(process.argv.slice(2));
process.exitCode = code;
process.stdout.write('', () => process.exit(code));
