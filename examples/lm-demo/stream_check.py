"""Check an OpenAI completions event stream read from stdin against a recorded completion.

    curl -N ... /v1/completions | stream_check.py EXPECTED_JSON INDEX

EXPECTED_JSON is a model's expected.json; INDEX picks the completion (its "text") to compare with.

Prints each token's text as its event arrives, then checks the stream: every event is a
"text_completion" chunk with one choice (index 0), the token events carry finish_reason null,
one last event has "text": "" and the finish reason, and "data: [DONE]" ends it. Prints

    tokens: N (finish_reason R)
    agreement: yes|no (with TVM 0.27's greedy text)

and exits 0 only when the stream is well formed and its text equals the recorded one.
An error body (the server's JSON error instead of a stream) is printed and fails the check.
"""

import json
import sys


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        expected = json.load(f)["completions"][int(sys.argv[2])]["text"]
    pieces, finish, done, problems = [], None, False, []
    for raw in sys.stdin:
        line = raw.rstrip("\r\n")
        if not line:
            continue
        if not line.startswith("data: "):
            problems.append(f"not an event line: {line[:200]!r}")
            continue
        data = line[len("data: ") :]
        if data == "[DONE]":
            done = True
            continue
        if done:
            problems.append("an event after [DONE]")
        try:
            event = json.loads(data)
            choice = event["choices"][0]
            if event["object"] != "text_completion" or choice["index"] != 0:
                problems.append(f"unexpected event {data[:200]}")
            if choice["finish_reason"] is None:
                if finish is not None:
                    problems.append("a token after the finish event")
                pieces.append(choice["text"])
                sys.stdout.write(choice["text"])
                sys.stdout.flush()
            else:
                if choice["text"] != "":
                    problems.append(f"the finish event carries text {choice['text']!r}")
                finish = choice["finish_reason"]
        except (ValueError, KeyError, IndexError, TypeError) as err:
            problems.append(f"malformed event ({err!r}): {data[:200]}")
    print()
    if not done:
        problems.append("no data: [DONE] at the end")
    if finish is None:
        problems.append("no finish event")
    text = "".join(pieces)
    print(f"tokens: {len(pieces)} (finish_reason {finish})")
    agree = text == expected
    print(f"agreement: {'yes' if agree else 'no'} (with TVM 0.27's greedy text)")
    if not agree:
        at = next((i for i, (a, b) in enumerate(zip(text, expected)) if a != b), None)
        at = min(len(text), len(expected)) if at is None else at
        print(
            f"   first difference at character {at}: got {text[at : at + 30]!r}, "
            f"want {expected[at : at + 30]!r}"
        )
    for p in problems:
        print(f"   stream problem: {p}")
    sys.exit(0 if agree and not problems else 1)


if __name__ == "__main__":
    main()
