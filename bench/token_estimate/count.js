// Adds the real token counts of three tokenizers to each chunk of a sample:
// o200k_base and cl100k_base (npm gpt-tokenizer, special-token strings as plain text)
// and Anthropic's published tokenizer (npm @anthropic-ai/tokenizer, NFKC first as it
// does). usage: node count.js IN OUT
const fs = require('fs');
const o200k = require('gpt-tokenizer/cjs/encoding/o200k_base');
const cl100k = require('gpt-tokenizer/cjs/encoding/cl100k_base');
const { getTokenizer } = require('@anthropic-ai/tokenizer');
const claude = getTokenizer();
const plain = { disallowedSpecial: new Set() };
const [input, output] = process.argv.slice(2);
const lines = fs.readFileSync(input, 'utf8').split('\n').filter(Boolean);
const out = lines.map((line) => {
  const c = JSON.parse(line);
  c.o200k = o200k.encode(c.text, plain).length;
  c.cl100k = cl100k.encode(c.text, plain).length;
  c.claude = claude.encode(c.text.normalize('NFKC'), 'all').length;
  return JSON.stringify(c);
});
claude.free();
fs.writeFileSync(output, out.join('\n') + '\n');
