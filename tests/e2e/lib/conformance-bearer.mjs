// Lets the pinned MCP conformance suite test a server that wants a key: its
// clients (the SDK's transport over fetch, and undici's request for the raw
// scenarios) send no Authorization header, and the suite has no option for
// one.  Registered with `node --import`: when CLOCHE_CONFORMANCE_BEARER is
// set, every request this process makes carries `Authorization: Bearer
// <it>`.  Both clients go through undici's global dispatcher (Node's fetch
// shares it), so one interceptor there covers them.
import { getGlobalDispatcher, setGlobalDispatcher } from 'undici';

const bearer = process.env.CLOCHE_CONFORMANCE_BEARER;
if (bearer) {
  const withAuth = (headers) => {
    const v = `Bearer ${bearer}`;
    if (!headers) return { authorization: v };
    if (Array.isArray(headers)) return [...headers, 'authorization', v];
    if (typeof headers[Symbol.iterator] === 'function' && typeof headers !== 'string') {
      return [...Array.from(headers).flat(), 'authorization', v];
    }
    return { ...headers, authorization: v };
  };
  setGlobalDispatcher(getGlobalDispatcher().compose((dispatch) => (opts, handler) =>
    dispatch({ ...opts, headers: withAuth(opts.headers) }, handler)));
}
