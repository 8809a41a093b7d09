import { execFileSync } from "node:child_process";
import { resolve } from "node:path";

/** The browser tests' global setup: Debian's Chromium, installed by the project's script when missing. */
export default function setup() {
  execFileSync("bash", [resolve(import.meta.dirname, "../../scripts/ensure-chromium.sh")], {
    stdio: "inherit",
  });
}
