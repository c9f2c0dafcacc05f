/**
 * The routes a Fastify instance serves, read through its public API: the tree `printRoutes()`
 * draws (each line one node of the router's radix tree, indented four columns a level, its
 * methods in parentheses when a route ends there). A route's URL is its nodes' labels joined,
 * from the root down. Nothing in src/ has to keep a list of routes for the tests.
 */
import type { FastifyInstance } from 'fastify';

export interface Route {
  method: string;
  url: string;
}

/** Every route `app` serves (HEAD ones included), once it is ready. */
export function routesOf(app: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const path: string[] = [];
  for (const line of app.printRoutes().split('\n')) {
    const node = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z]+(?:, [A-Z]+)*)\))?$/.exec(line);
    if (!node) {
      if (line.trim() !== '')
        throw new Error(`printRoutes(): a line not understood: ${JSON.stringify(line)}`);
      continue;
    }
    const depth = (node[1] as string).length / 4;
    path.length = depth;
    path.push(node[2] as string);
    for (const method of node[3]?.split(', ') ?? []) routes.push({ method, url: path.join('') });
  }
  // Read right: each is a route the router finds.
  for (const r of routes)
    if (!app.hasRoute(r))
      throw new Error(`printRoutes(): ${r.method} ${r.url} read from the tree, but not a route`);
  return routes;
}
