'use strict';

var proto = require('./proto');

/**
 * Creates an application.
 */
module.exports = function createApplication(options) {
  return proto.init(options);
};

exports.version = '1.0.0';

// Compiles a trust setting into a function.
exports.compileTrust = function (value) {
  if (typeof value === 'function') return value;
  return function () {
    return value === true;
  };
};

exports.Router = class Router {
  route(path) {
    return path;
  }
};

app.listen = (port) => server.listen(port);

res.send = function send(body) {
  this.end(body);
  return this;
};

Emitter.prototype.on = function on(name, fn) {
  this.handlers[name] = fn;
};

lib.util.format = function* (parts) {
  yield parts.join(' ');
};

handlers['close'] = function () {};

this.ready = function () {};

make().value = function () {};
