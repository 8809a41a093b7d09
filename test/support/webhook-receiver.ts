import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** One POST a receiver got: its raw body (for signature checks), headers, path and arrival. */
export interface Delivery {
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly path: string;
  readonly at: number;
}

export type Answer =
  | number
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: string };

/**
 * A webhook receiver on 127.0.0.1 for the push tests and benches: each request's body read
 * whole, handed to `answer`, and answered with what it returns (a status, or a status with
 * headers and a body).
 */
export async function startWebhookReceiver(
  answer: (delivery: Delivery) => Answer | Promise<Answer>,
): Promise<{ readonly server: Server; readonly url: string; close(): void }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const delivery: Delivery = {
        body: Buffer.concat(chunks).toString("utf8"),
        headers: request.headers as Record<string, string>,
        path: request.url ?? "/",
        at: Date.now(),
      };
      void Promise.resolve(answer(delivery)).then((given) => {
        const { status, headers, body } = typeof given === "number" ? { status: given } : given;
        response.writeHead(status, headers).end(body ?? "");
      });
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, close: () => server.close() };
}
