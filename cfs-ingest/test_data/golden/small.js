'use strict';

const path = require('path');

/**
 * Joins parts.
 */
function join(...parts) {
  return path.join(...parts);
}

function* ids() {
  let i = 0;
  while (true) yield i++;
}

class Cache {
  constructor() {
    this.map = new Map();
  }

  get(key) {
    return this.map.get(key);
  }
}

var legacy = 1;

module.exports = { join, ids, Cache, legacy };
