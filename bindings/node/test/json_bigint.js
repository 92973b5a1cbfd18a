'use strict';
// JSON.parse that keeps integers beyond 2^53 exact: they come back as bigint (the conformance
// case files carry int64 extremes).

function parse(text) {
  let i = 0;
  const ws = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const fail = (why) => {
    throw new SyntaxError(`JSON: ${why} at offset ${i}`);
  };
  function value() {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const out = {};
      ws();
      if (text[i] === '}') return i++, out;
      for (;;) {
        ws();
        if (text[i] !== '"') fail('expected a key');
        const k = str();
        ws();
        if (text[i++] !== ':') fail('expected :');
        out[k] = value();
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') return i++, out;
        fail('expected , or }');
      }
    }
    if (c === '[') {
      i++;
      const out = [];
      ws();
      if (text[i] === ']') return i++, out;
      for (;;) {
        out.push(value());
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') return i++, out;
        fail('expected , or ]');
      }
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) return (i += 4), true;
    if (text.startsWith('false', i)) return (i += 5), false;
    if (text.startsWith('null', i)) return (i += 4), null;
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail('unexpected character');
    i += m[0].length;
    if (m[2] === undefined && m[3] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return Number(m[0]);
  }
  function str() {
    const start = i;
    i++;
    while (text[i] !== '"') {
      if (text[i] === '\\') i++;
      i++;
      if (i >= text.length) fail('unterminated string');
    }
    i++;
    return JSON.parse(text.slice(start, i));
  }
  const out = value();
  ws();
  if (i !== text.length) fail('trailing characters');
  return out;
}

module.exports = { parse };
