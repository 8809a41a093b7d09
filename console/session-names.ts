/**
 * Where the console session's token travels (decision 0031), shared by the page
 * (session-token.ts, api.ts) and the server that checks it (cli/console/console-server.ts).
 */
/** The query parameter of the address `jobsched console` prints, which hands the page the token. */
export const TOKEN_PARAMETER = "token";
/** The header every API call of the page carries it in. */
export const TOKEN_HEADER = "jobsched-console-token";
