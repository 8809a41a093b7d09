import { Presets, SingleBar } from "cli-progress";

/**
 * Progress of a command that can take a while (import, export, bulk create, replay all,
 * backfill), drawn on standard error with cli-progress while it runs and cleared at the end.
 * Only on a terminal: when standard error is piped or redirected, or with --json, nothing is
 * drawn (cli-progress draws nothing on a stream that is not a TTY) and the output stays the
 * plain text a script reads.
 */
export interface Progress {
  /** Whether anything is drawn (a terminal, not --json): lines of its own would break the bar. */
  readonly drawing: boolean;
  /** `done` of `total` (when the total is known), with a short note (the item at hand). */
  update(done: number, note?: string): void;
  /** The total, once it is known (a listing finished). */
  setTotal(total: number): void;
  /** Clears the bar; call it before the command prints its result. */
  stop(): void;
}

export interface ProgressStream {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressOptions {
  /** What is counted: "schedules", "jobs", "lines", "dead letters", "parts". */
  readonly unit: string;
  readonly total?: number;
  /** Where to draw (standard error); tests give a stream that says it is a TTY. */
  readonly stream?: ProgressStream;
  /** --json: never drawn. */
  readonly quiet?: boolean;
}

const NO_PROGRESS: Progress = {
  drawing: false,
  update: () => undefined,
  setTotal: () => undefined,
  stop: () => undefined,
};

export function startProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stderr;
  if (options.quiet === true || stream.isTTY !== true) return NO_PROGRESS;
  let total = options.total;
  let done = 0;
  let note = "";
  const draw = () => {
    const bar = new SingleBar(
      {
        // With a total, a bar and "done/total"; without one yet, the count alone.
        format:
          total === undefined
            ? `{value} ${options.unit} {note}`
            : `{bar} {value}/{total} ${options.unit} {note}`,
        // cli-progress types the stream as a socket; it only writes, reads isTTY and moves the cursor.
        stream: stream as NodeJS.WriteStream,
        hideCursor: true,
        clearOnComplete: true,
        // Redrawn at most 10 times a second, and at once on a change in a slow command.
        fps: 10,
        forceRedraw: true,
      },
      Presets.shades_classic,
    );
    bar.start(total ?? 0, done, { note });
    return bar;
  };
  let bar = draw();
  return {
    drawing: true,
    update(value, text = "") {
      done = value;
      note = text;
      bar.update(done, { note });
    },
    setTotal(value) {
      if (total === undefined) {
        // The format changes with a total: the count line makes way for a bar.
        total = value;
        bar.stop();
        bar = draw();
      } else {
        total = value;
        bar.setTotal(value);
      }
    },
    stop() {
      bar.stop();
    },
  };
}
