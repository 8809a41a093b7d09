/** The ports of idle workers' lane listening (decision 0049), beside the others in ports.ts. */

/** A lane a listening worker long-polls: one of its tenants' (tenant, type) queues. */
export interface ListenedLane {
  readonly tenant: string;
  readonly type: string;
  readonly queueUrl: string;
}

/** What a listening worker may receive with: credentials that reach only its lanes, or why not. */
export type ListenAccess =
  | {
      readonly granted: true;
      readonly region: string;
      /** Only against a local emulator. */
      readonly endpoint?: string;
      readonly credentials: {
        readonly accessKeyId: string;
        readonly secretAccessKey: string;
        readonly sessionToken?: string;
      };
      readonly expiresAt: number;
    }
  | { readonly granted: false; readonly reason: string };

/**
 * Idle workers wait on their lanes in SQS instead of in a held request (decision 0049): the
 * lanes to listen on, and credentials that may only receive from them.
 */
export interface LaneListening {
  /**
   * The lanes of these (tenant, type) pairs, made where there are none yet and marked used (so
   * the janitor keeps lanes that workers listen on). A `gone` URL of one of these lanes (its
   * queue was found deleted) is opened afresh; any other is ignored.
   */
  open(
    pairs: ReadonlyArray<{ readonly tenant: string; readonly type: string }>,
    gone: readonly string[],
  ): Promise<ListenedLane[]>;
  /**
   * Why these lanes could not be listened on whatever is stored (no listener role; a session
   * policy past STS's limit), before anything is counted or made; undefined if they can.
   */
  refusal(pairs: ReadonlyArray<{ readonly tenant: string; readonly type: string }>): string | undefined;
  /** Credentials that may receive from these queues and nothing else, for a session so named. */
  access(queueUrls: readonly string[], sessionName: string, now: number): Promise<ListenAccess>;
}
