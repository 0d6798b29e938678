/**
 * A one-line progress indicator on stderr: rows done / total, percentage, rows/s and ETA.
 * On a TTY the line is redrawn in place (at most 10 times a second); otherwise a plain line is
 * printed at most once a second.
 */
export class Progress {
  private done = 0;
  private skipped = 0;
  private readonly started = performance.now();
  private lastDraw = this.started;
  private readonly tty: boolean;
  private readonly interval: number;

  /**
   * @param label what is being loaded, e.g. "cities"
   * @param total number of rows expected
   * @param stream where to draw (stderr by default)
   */
  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.tty = Boolean(stream.isTTY);
    this.interval = this.tty ? 100 : 1000;
  }

  /** Records `n` finished rows, `skipped` of which already existed, and redraws if due. */
  tick(n = 1, skipped = 0): void {
    this.done += n;
    this.skipped += skipped;
    const now = performance.now();
    if (now - this.lastDraw >= this.interval) {
      this.lastDraw = now;
      this.draw(false);
    }
  }

  /** Draws the final state and ends the line. Returns elapsed seconds. */
  finish(): number {
    this.draw(true);
    return (performance.now() - this.started) / 1000;
  }

  private draw(final: boolean): void {
    const elapsed = (performance.now() - this.started) / 1000;
    const rate = elapsed > 0 ? this.done / elapsed : 0;
    const pct = this.total ? (100 * this.done) / this.total : 100;
    const remaining = rate > 0 ? (this.total - this.done) / rate : Infinity;
    const parts = [
      `${this.label.padEnd(9)} ${String(this.done).padStart(String(this.total).length)}/${this.total}`,
      `${pct.toFixed(1).padStart(5)}%`,
      `${Math.round(rate).toString().padStart(6)} rows/s`,
      final ? `done in ${elapsed.toFixed(1)}s` : `ETA ${formatSeconds(remaining)}`,
    ];
    if (this.skipped) parts.push(`${this.skipped} already present`);
    const line = parts.join('  ');
    if (this.tty) {
      this.stream.write(`\r${line}\x1b[K${final ? '\n' : ''}`);
    } else {
      this.stream.write(`${line}\n`);
    }
  }
}

function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return '--';
  if (s < 60) return `${Math.ceil(s)}s`;
  return `${Math.floor(s / 60)}m${String(Math.ceil(s % 60)).padStart(2, '0')}s`;
}
