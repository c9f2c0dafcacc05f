/**
 * The package's public entry: the typed gRPC client for internal services. The service itself
 * runs from `npm start` (src/main.ts).
 */
export * from './client';
