/**
 * Progress for long operator commands: a bar redrawn in place on a terminal, plain
 * lines (every tenth of the way) when the output is a file or a pipe.
 */
export interface Progress {
  update(done: number): void;
  finish(note?: string): void;
}

export function progress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const tty = stream.isTTY === true;
  let lastTenth = -1;
  let lastDraw = 0;
  const draw = (done: number): void => {
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    if (tty) {
      const now = Date.now();
      if (now - lastDraw < 50 && done < total) return;
      lastDraw = now;
      const width = 30;
      const filled = Math.round(fraction * width);
      stream.write(`\r${label} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${Math.floor(fraction * 100)}% (${done}/${total})`);
      return;
    }
    const tenth = Math.floor(fraction * 10);
    if (tenth > lastTenth) {
      lastTenth = tenth;
      stream.write(`${label}: ${tenth * 10}% (${done}/${total})\n`);
    }
  };
  return {
    update: draw,
    finish(note) {
      draw(total);
      if (tty) stream.write('\n');
      if (note) stream.write(`${label}: ${note}\n`);
    },
  };
}
