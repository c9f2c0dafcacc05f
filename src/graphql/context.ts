/**
 * The per-request GraphQL context: the authenticated principal, the core services, and
 * DataLoaders created for this request only (never shared across requests or tenants).
 */
import type { Principal } from '../core/model';
import type { Services } from '../core/services';
import type { Loaders } from './loaders';

export interface GraphqlContext {
  principal: Principal;
  services: Services;
  loaders: Loaders;
}
