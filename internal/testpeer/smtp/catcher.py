"""A mail catcher for the notification tests: an aiosmtpd SMTP server on
127.0.0.1 that requires STARTTLS (with the certificate the test made) and
writes each message it accepts to a directory as <n>.eml.

    catcher.py PORT DIR CERT KEY
"""

import asyncio
import os
import ssl
import sys

from aiosmtpd.controller import Controller


class Saver:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.count = 0

    async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
        self.count += 1
        path = os.path.join(self.directory, f"{self.count}.eml")
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(tmp, path)
        return "250 Message accepted for delivery"


def main() -> None:
    port, directory, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    controller = Controller(Saver(directory), hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True)
    controller.start()
    print(f"listening on 127.0.0.1:{port}", flush=True)
    try:
        asyncio.run(asyncio.Event().wait())
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
