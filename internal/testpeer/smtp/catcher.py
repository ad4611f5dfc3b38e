"""A mail catcher: an aiosmtpd SMTP server on 127.0.0.1 that keeps what it
is sent. The notification tests run it with STARTTLS required (with a
certificate the test made) and --dir; `make mail-catcher` runs it for the
demo with --print, which shows each mail's plain-text part, links included.

    catcher.py --port PORT [--dir DIR] [--tls CERT KEY] [--print]

--dir writes each message to DIR/<n>.eml. When DIR/delay-reply exists, it
holds a number of seconds to wait, after the message is written and before
the server answers the end of its data: a test uses it to stop the sender
while the server has the mail and has not said so.
"""

import argparse
import asyncio
import email
import email.policy
import os
import ssl
import sys

from aiosmtpd.controller import Controller


class Catcher:
    def __init__(self, directory: str | None, show: bool) -> None:
        self.directory = directory
        self.show = show
        self.count = 0

    async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
        self.count += 1
        content = envelope.original_content or envelope.content
        if self.show:
            show(self.count, envelope.rcpt_tos, content)
        if self.directory is not None:
            path = os.path.join(self.directory, f"{self.count}.eml")
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(content)
            os.rename(tmp, path)
            try:
                with open(os.path.join(self.directory, "delay-reply")) as f:
                    await asyncio.sleep(float(f.read().strip() or "0"))
            except FileNotFoundError:
                pass
        return "250 Message accepted for delivery"


def show(n: int, to: list[str], content: bytes) -> None:
    msg = email.message_from_bytes(content, policy=email.policy.default)
    print(f"--- mail {n} to {', '.join(to)}: {msg['Subject']}")
    body = msg.get_body(preferencelist=("plain",))  # type: ignore[attr-defined]
    text = body.get_content() if body is not None else "(no plain-text part)"
    print(text.replace("\r\n", "\n").rstrip())
    print(flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description="a mail catcher on 127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--dir", help="write each message to DIR/<n>.eml")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="require STARTTLS with this certificate")
    p.add_argument("--print", dest="show", action="store_true", help="print each mail's plain-text part")
    args = p.parse_args()
    if args.dir is None and not args.show:
        p.error("give --dir, --print or both: else every mail is lost")
    kwargs = {}
    if args.tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.tls[0], args.tls[1])
        kwargs = {"tls_context": context, "require_starttls": True}
    controller = Controller(Catcher(args.dir, args.show), hostname="127.0.0.1", port=args.port, **kwargs)
    try:
        controller.start()
    except Exception as e:  # the port is taken, most often
        sys.exit(f"catcher: cannot listen on 127.0.0.1:{args.port}: {e}")
    print(f"listening on 127.0.0.1:{args.port}", flush=True)
    try:
        asyncio.run(asyncio.Event().wait())
    except KeyboardInterrupt:
        pass
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
