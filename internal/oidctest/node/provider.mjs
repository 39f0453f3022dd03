// provider.mjs: the OpenID provider of MCP-Flow's authentication tests and
// of `make oidc` (internal/oidctest). oauth2-mock-server serves discovery
// (/.well-known/openid-configuration), the JWKS (/jwks) and a token endpoint
// (/token); this script only shapes what it issues.
//
//   node provider.mjs [--port N] [--hint RESOURCE SCOPE] [--jwks-uri URL]
//
// --port: 0 (the default) is any free port. --hint: print on stderr, once
// listening, a curl command that gets a token for RESOURCE and SCOPE
// (`make oidc`). --jwks-uri: the jwks_uri its discovery document names, for
// tests of a verifier's checks of it (the JWKS is still served at /jwks).
//
// It listens on 127.0.0.1 only and prints its issuer URL as the first line of
// stdout; everything else goes to stderr.
//
// A client_credentials grant gets an RFC 9068 JWT access token (typ at+jwt,
// sub, client_id, aud, scope, iat, nbf, exp, jti), shaped by the request's
// parameters:
//   resource          RFC 8707: the aud claim (may be repeated).
//   scope             the scope claim (space separated).
//   client_id         the client_id claim (and sub when test_subject is absent);
//                     no client is registered, any client_id is accepted.
// and, for tests only:
//   test_subject      the sub claim.
//   test_expires_in   seconds from now to exp (negative: already expired).
//   test_issuer       the iss claim instead of this issuer.
//   test_foreign      "true": signed by a key that is not in the JWKS, under
//                     the current key's kid.
//   test_typ          the typ header instead of at+jwt.
//   test_scp          "true": the scopes in an scp array instead of scope.
//   test_no_sub       "true": no sub claim.
// POST /rotate (loopback only) makes a new key the signing key; the JWKS keeps
// serving the old ones, so that tokens already issued still verify.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { OAuth2Issuer, OAuth2Service } from "oauth2-mock-server";

let port = 0;
let hint;
let jwksURI;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === "--port" && i + 1 < process.argv.length) {
    port = Number(process.argv[++i]);
  } else if (process.argv[i] === "--jwks-uri" && i + 1 < process.argv.length) {
    jwksURI = process.argv[++i];
  } else if (process.argv[i] === "--hint" && i + 2 < process.argv.length) {
    hint = { resource: process.argv[i + 1], scope: process.argv[i + 2] };
    i += 2;
  } else {
    console.error(`provider.mjs: unknown argument ${process.argv[i]}; usage: node provider.mjs [--port N] [--hint RESOURCE SCOPE] [--jwks-uri URL]`);
    process.exit(2);
  }
}
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`provider.mjs: bad port ${port}`);
  process.exit(2);
}

const issuer = new OAuth2Issuer(false);
let current = (await issuer.keys.generate("RS256")).kid;
// foreign signs test_foreign tokens: same kid as the current key, other key
// material, never published.
const foreign = new OAuth2Issuer(false);

function loopback(addr) {
  return addr === "::1" || addr.startsWith("127.") || addr.startsWith("::ffff:127.");
}

class Service extends OAuth2Service {
  // buildToken signs with the current key (oauth2-mock-server would take the
  // store's keys in turn) or, for test_foreign, with the foreign one.
  async buildToken(req, expiresIn, xfn) {
    const b = req.body ?? {};
    let signer = this.issuer;
    if (b.grant_type === "client_credentials" && b.test_foreign === "true") {
      signer = foreign;
      foreign.url = this.issuer.url;
      if (foreign.keys.get(current) === undefined) {
        await foreign.keys.generate("RS256", { kid: current });
      }
    }
    if (b.grant_type === "client_credentials" && b.test_expires_in !== undefined) {
      expiresIn = Number(b.test_expires_in);
      if (!Number.isInteger(expiresIn)) {
        throw new Error("test_expires_in must be an integer");
      }
    }
    signer.once("beforeSigning", (token) => this.emit("beforeTokenSigning", token, req));
    return signer.buildToken({ kid: current, expiresIn, scopesOrTransform: xfn });
  }
}

const service = new Service(issuer);

service.on("beforeTokenSigning", (token, req) => {
  const b = req.body ?? {};
  if (b.grant_type !== "client_credentials") return;
  const clientId = typeof b.client_id === "string" && b.client_id !== "" ? b.client_id : "mcp-flow-client";
  token.header.typ = "at+jwt"; // RFC 9068 §2.1
  if (b.resource !== undefined) token.payload.aud = b.resource; // RFC 8707 §2
  token.payload.sub = typeof b.test_subject === "string" ? b.test_subject : clientId;
  token.payload.client_id = clientId;
  token.payload.jti = randomUUID();
  if (typeof b.test_issuer === "string") token.payload.iss = b.test_issuer;
  if (typeof b.test_typ === "string") token.header.typ = b.test_typ;
  if (b.test_no_sub === "true") delete token.payload.sub;
  if (b.test_scp === "true") {
    token.payload.scp = (token.payload.scope ?? "").split(" ").filter((s) => s !== "");
    delete token.payload.scope;
  }
});

service.on("beforeWellKnownOpenIdConfiguration", (res) => {
  if (jwksURI !== undefined) res.body.jwks_uri = jwksURI;
});

service.on("beforeResponse", (res, req) => {
  const b = req.body ?? {};
  if (b.grant_type === "client_credentials" && b.test_expires_in !== undefined) {
    res.body.expires_in = Number(b.test_expires_in);
  }
});

service.addRoute("POST", "/rotate", async (req, res) => {
  if (!loopback(req.socket.remoteAddress ?? "")) {
    res.statusCode = 403;
    res.end();
    return;
  }
  current = (await issuer.keys.generate("RS256")).kid;
  console.error(`provider.mjs: rotated; signing key is now ${current}`);
  res.setHeader("Content-Type", "application/json");
  res.end(JSON.stringify({ kid: current }));
});

const server = createServer(service.requestHandler);
server.on("error", (err) => {
  console.error(`provider.mjs: ${err.message}`);
  process.exit(1);
});
server.listen(port, "127.0.0.1", () => {
  issuer.url = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(issuer.url + "\n");
  console.error(`provider.mjs: OpenID provider ${issuer.url} (discovery ${issuer.url}/.well-known/openid-configuration)`);
  if (hint !== undefined) {
    const q = (s) => `'${s.replaceAll("'", "'\\''")}'`;
    console.error(
      `\nissuer: ${issuer.url}\n` +
        `a token (client_credentials; any client_id is accepted):\n\n` +
        `  curl -s ${issuer.url}/token -d grant_type=client_credentials -d client_id=mcp-flow-client \\\n` +
        `    --data-urlencode resource=${q(hint.resource)} --data-urlencode scope=${q(hint.scope)}\n\n` +
        `only the access token, in $TOKEN:\n\n` +
        `  TOKEN=$(curl -s ${issuer.url}/token -d grant_type=client_credentials --data-urlencode resource=${q(hint.resource)} --data-urlencode scope=${q(hint.scope)} | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')\n\n` +
        `Ctrl-C stops it.`,
    );
  }
});

for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
