#!/usr/bin/python3
"""A small MCP client over Streamable HTTP, for the podman tests: it runs inside Stockade's image
(python3 is there; the official SDKs are not) and on the host against a pod's published port.

  mcp_http.py URL [--token T] [--token-header NAME] call TOOL JSON_ARGS
      initializes a session, calls TOOL, prints the result's text content; exits 0 when the
      result is not an error, 1 when it is, 2 when the exchange itself failed
  mcp_http.py URL get PATH         prints the status and the body of GET PATH (e.g. /readyz)
  mcp_http.py URL post PATH JSON [--token T]
                                   prints the status and body of a POST with a JSON body
"""
import argparse
import json
import sys
import urllib.error
import urllib.request

PROTOCOL = "2025-06-18"


class Failed(Exception):
    pass


def request(url, method, body=None, headers=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as reply:
            return reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def message_of(headers, body):
    """The JSON-RPC response in a reply: a JSON body, or the last data event of an SSE stream."""
    kind = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    if kind.startswith("text/event-stream"):
        found = None
        for event in body.decode().split("\n\n"):
            data = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
            if data:
                message = json.loads("\n".join(data))
                if "result" in message or "error" in message:
                    found = message
        if found is None:
            raise Failed("the event stream held no response")
        return found
    return json.loads(body)


class Session:
    def __init__(self, url, auth_headers):
        self.url = url
        self.headers = {"Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": PROTOCOL, **auth_headers}
        self.next_id = 1
        status, headers, body = self.post({
            "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "stockade-podman-test", "version": "1"}}})
        if status != 200:
            raise Failed(f"initialize: HTTP {status}: {body.decode(errors='replace')}")
        session = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id")
        if not session:
            raise Failed("initialize: no Mcp-Session-Id")
        self.headers["Mcp-Session-Id"] = session
        status, _, body = request(url, "POST", {"jsonrpc": "2.0",
                                                "method": "notifications/initialized"},
                                  self.headers)
        if status != 202:
            raise Failed(f"notifications/initialized: HTTP {status}: {body!r}")

    def post(self, call):
        call = {"jsonrpc": "2.0", "id": self.next_id, **call}
        self.next_id += 1
        return request(self.url, "POST", call, self.headers)

    def call(self, tool, arguments):
        status, headers, body = self.post({"method": "tools/call",
                                           "params": {"name": tool, "arguments": arguments}})
        if status != 200:
            raise Failed(f"tools/call: HTTP {status}: {body.decode(errors='replace')}")
        message = message_of(headers, body)
        if "error" in message:
            raise Failed(f"tools/call: {message['error']}")
        return message["result"]

    def close(self):
        request(self.url, "DELETE", None, self.headers)


def auth_headers(args):
    if not args.token:
        return {}
    if args.token_header.lower() == "authorization":
        return {"Authorization": f"Bearer {args.token}"}
    return {args.token_header: args.token}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url", help="the server, e.g. http://127.0.0.1:8888")
    parser.add_argument("--token")
    parser.add_argument("--token-header", default="Authorization")
    parser.add_argument("verb", choices=["call", "get", "post"])
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args()
    base = args.url.rstrip("/")
    try:
        if args.verb == "get":
            status, _, body = request(base + args.rest[0], "GET", None, auth_headers(args))
            print(status)
            sys.stdout.write(body.decode(errors="replace"))
            return 0
        if args.verb == "post":
            status, _, body = request(base + args.rest[0], "POST", json.loads(args.rest[1]),
                                      auth_headers(args))
            print(status)
            sys.stdout.write(body.decode(errors="replace"))
            return 0
        session = Session(base + "/mcp", auth_headers(args))
        result = session.call(args.rest[0], json.loads(args.rest[1]))
        session.close()
        for item in result.get("content", []):
            if item.get("type") == "text":
                print(item["text"])
        return 1 if result.get("isError") else 0
    except (Failed, OSError, ValueError) as error:
        print(f"mcp_http.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
