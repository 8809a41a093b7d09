/** Sleeps for `ms`; nothing wakes it sooner (a call's backoff between its tries). */
export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/** Sleeps, but wakes at once when `signal` aborts (a stopping worker does not wait out a pause). */
export function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      done();
    }
    signal.addEventListener("abort", finish, { once: true });
  });
}
