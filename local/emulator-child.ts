// The child side of emulator-process.ts: start dynalite in memory, report its endpoint, run.
import { startDynamo } from "./emulators";

const dynamo = await startDynamo();
process.send?.({ endpoint: dynamo.endpoint });
process.on("SIGTERM", () => {
  void dynamo.close().then(() => process.exit(0));
});
