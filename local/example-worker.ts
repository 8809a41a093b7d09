/**
 * The example worker the local runtime starts: it leases runs of type `example.log` over the
 * same HTTP lease protocol a real worker uses, logs each run it executes, and completes it with
 * its fence. It stops taking work when its signal aborts.
 */
export const EXAMPLE_TYPE = "example.log";

interface LeaseJson {
  runId: string;
  runKey: string;
  fence: number;
  attempt: number;
  scheduledFor: string;
  payload: unknown;
}

export async function runExampleWorker(
  baseUrl: string,
  signal: AbortSignal,
  print = console.log,
): Promise<void> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status} ${await response.text()}`);
    return response.json() as Promise<unknown>;
  };

  while (!signal.aborted) {
    try {
      const leases = (await post("/internal/leases", {
        workerId: "example-worker",
        types: [EXAMPLE_TYPE],
        max: 10,
        waitSeconds: 1,
      })) as LeaseJson[];
      for (const lease of leases) {
        const lateMs = Date.now() - Date.parse(lease.scheduledFor);
        print(
          `[example-worker] ran ${lease.runKey} (attempt ${lease.attempt}, fence ${lease.fence}, ` +
            `${lateMs} ms after its time) payload=${JSON.stringify(lease.payload)}`,
        );
        await post(`/internal/leases/${lease.runId}/complete`, { fence: lease.fence, result: "succeeded" });
      }
    } catch (error) {
      if (signal.aborted) return;
      print(`[example-worker] ${(error as Error).message}; retrying in 1 s`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
