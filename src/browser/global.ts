/**
 * The classic script (rampart.js): the client's functions as `window.Rampart`, and as
 * `window.Castle` for pages written for castle-js 2.x's browser build (`Castle.configure({pk})`,
 * `<form onsubmit="Castle.injectTokenOnSubmit(event)">`, `Castle.page(…)`).
 */
import * as client from './index';

const api = {
  configure: client.configure,
  createRequestToken: client.createRequestToken,
  injectTokenOnSubmit: client.injectTokenOnSubmit,
  formEventOnSubmit: client.formEventOnSubmit,
  page: client.page,
  form: client.form,
  custom: client.custom,
  user: client.user,
  userJwt: client.userJwt,
  exposeCastleNames: client.exposeCastleNames,
  getClientId: client.getClientId,
  proveWork: client.proveWork,
};
const w = window as unknown as { Rampart?: unknown; Castle?: unknown };
w.Rampart = api;
w.Castle = api;
export {};
