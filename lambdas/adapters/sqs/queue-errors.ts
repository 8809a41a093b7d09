/** SQS's answer for a queue that does not exist (deleted, or a restarted local emulator). */
export function isQueueGone(error: unknown): boolean {
  return (
    error instanceof Error && /NonExistentQueue|QueueDoesNotExist/.test(`${error.name} ${error.message}`)
  );
}
