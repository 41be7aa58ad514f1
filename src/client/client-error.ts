/** A command's failure a user can act on: printed as one line `qpgate <command>: <message>`, never a stack (src/gateway/cli.ts). */
export class ClientError extends Error {}
