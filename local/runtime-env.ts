/**
 * Environment defaults for the local runtime. Imported first by main.ts: the logger reads its
 * level when its module is evaluated, so these must be set before anything imports it.
 */
// Handlers log warnings and errors only; the example worker prints a readable line per run.
process.env.POWERTOOLS_LOG_LEVEL ??= "WARN";
// The SDK warns that its 2027 releases will need Node 22; the lock file pins today's, which run on 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
// Sweep metrics are CloudWatch EMF lines; nothing reads them locally.
process.env.POWERTOOLS_METRICS_DISABLED ??= "true";
