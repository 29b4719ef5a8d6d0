// Makes `require('vscode')` resolve to the stub. Must be imported before anything that
// loads vscode-languageclient.
import Module = require('node:module');
import * as path from 'node:path';

const mockPath = path.join(__dirname, 'vscode-mock.js');
type Resolve = (request: string, parent: unknown, isMain: boolean, options: unknown) => string;
const internal = Module as unknown as { _resolveFilename: Resolve };
const original = internal._resolveFilename;
internal._resolveFilename = function (request, parent, isMain, options) {
  return request === 'vscode' ? mockPath : original.call(this, request, parent, isMain, options);
};
