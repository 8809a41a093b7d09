import { Logger } from "@aws-lambda-powertools/logger";
import type { Log } from "../core/deps";

/**
 * Structured JSON logs (Powertools). One logger per process; POWERTOOLS_LOG_LEVEL sets the
 * level and the local runtime turns it down so the terminal stays readable.
 */
export const logger = new Logger({ serviceName: "jobsched" });

export const log: Log = {
  info: (message, extra) => logger.info(message, { ...extra }),
  warn: (message, extra) => logger.warn(message, { ...extra }),
  error: (message, extra) => logger.error(message, { ...extra }),
};
