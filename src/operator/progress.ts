/**
 * Progress for long operator commands: a cli-progress bar redrawn in place on a
 * terminal, plain lines (every tenth of the way) when the output is a file or a pipe.
 */
import cliProgress from 'cli-progress';

/** A running progress report. */
export interface Progress {
  update(done: number): void;
  /** Changes the total, for work whose size is learned on the way. */
  setTotal(total: number): void;
  finish(note?: string): void;
}

/** A progress report on `stream`: a bar on a terminal, plain lines otherwise. */
export function progress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  const report = stream.isTTY === true ? terminalBar(label, total, stream) : plainLines(label, total, stream);
  return {
    ...report,
    finish(note) {
      report.finish();
      if (note) stream.write(`${label}: ${note}\n`);
    },
  };
}

function terminalBar(label: string, total: number, stream: NodeJS.WriteStream): Progress {
  const bar = new cliProgress.SingleBar({ stream, format: `${label} [{bar}] {percentage}% ({value}/{total})`, barsize: 30 }, cliProgress.Presets.shades_classic);
  bar.start(total, 0);
  return {
    update: (done) => bar.update(done),
    setTotal: (n) => bar.setTotal(n),
    finish() {
      bar.update(bar.getTotal());
      bar.stop();
    },
  };
}

function plainLines(label: string, total: number, stream: NodeJS.WriteStream): Progress {
  let lastTenth = -1;
  const update = (done: number): void => {
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const tenth = Math.floor(fraction * 10);
    if (tenth > lastTenth) {
      lastTenth = tenth;
      stream.write(`${label}: ${tenth * 10}% (${done}/${total})\n`);
    }
  };
  return {
    update,
    setTotal(n) {
      total = n;
    },
    finish: () => update(total),
  };
}
