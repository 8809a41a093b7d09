// Keep test output readable: handlers log nothing unless a run sets POWERTOOLS_LOG_LEVEL.
process.env.POWERTOOLS_LOG_LEVEL ??= "SILENT";
// The SDK warns that its 2027 releases will need Node 22; the lock file pins today's, which run on 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";

process.env.POWERTOOLS_METRICS_DISABLED = "true";

// Matchers such as toHaveReceivedCommandWith for aws-sdk-client-mock.
import "aws-sdk-client-mock-vitest/extend";
