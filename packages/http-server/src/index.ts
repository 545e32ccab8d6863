export { createHttpApp, listen, type HttpAppOptions, type Listening } from './server.js';
export { acceptRawBody, rawBodyOf } from './raw-body.js';
export { mountNodeHandler, type NodeHandler } from './node-handler.js';
