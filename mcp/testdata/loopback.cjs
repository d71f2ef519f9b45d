// Preloaded (node --require) into the npm MCP servers the tests start:
// every server socket listens on 127.0.0.1 only, and the port it got is
// printed to stderr as "TOOLHOST_TEST_LISTENING <port>" so that tests can
// ask for port 0.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const cb = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
  const opts = typeof args[0] === "object" && args[0] !== null ? { ...args[0] } : { port: Number(args[0] || 0) };
  opts.host = "127.0.0.1";
  this.once("listening", () => {
    process.stderr.write(`TOOLHOST_TEST_LISTENING ${this.address().port}\n`);
  });
  return cb ? listen.call(this, opts, cb) : listen.call(this, opts);
};
