// This module is browser compatible.

/**
 * Put a check between a pipeline and its sink's commit: every chunk goes
 * through unchanged (each write finishes before the next, as with the sink
 * itself), and when the stream ends, `check` runs before the sink is closed,
 * which is when a file sink renames its partial file into place. A failing
 * check aborts the sink instead, so nothing is kept.
 *
 * @param sink The real sink.
 * @param check What must hold before the output is kept.
 * @returns A sink to pipe into instead.
 */
export function checkBeforeClose<T>(
  sink: WritableStream<T>,
  check: () => Promise<void>,
): WritableStream<T> {
  const writer = sink.getWriter();
  return new WritableStream<T>({
    write: (chunk) => writer.write(chunk),
    async close() {
      try {
        await check();
      } catch (error) {
        await writer.abort(error).catch(() => {});
        throw error;
      }
      await writer.close();
    },
    abort: (reason) => writer.abort(reason),
  });
}
