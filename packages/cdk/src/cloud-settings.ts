import type { SchedulerSettings } from "../../../lambdas/definitions/settings";

/** The settings checks only the cloud needs: EventBridge rules fire at most once a minute. */
export function cloudSettings(
  settings: SchedulerSettings,
  /** How an error names a setting: `settings.<key>` for the construct's props, the context key for the app's. */
  nameOf: (key: keyof SchedulerSettings) => string = (key) => `settings.${key}`,
): SchedulerSettings {
  if (settings.tickSeconds < 60) {
    throw new Error(`${nameOf("tickSeconds")}: EventBridge cannot tick more often than every 60 s`);
  }
  // In AWS a push target never reaches the deployment's own network (decision 0029).
  if (settings.allowPrivateTargets !== 0) {
    throw new Error(
      `${nameOf("allowPrivateTargets")}: must be 0 in AWS (private and loopback targets are for the local runtime only)`,
    );
  }
  return settings;
}
