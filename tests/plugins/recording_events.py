"""Test-only event sink that records every event it receives."""

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec


class RecordingSink:
    name = "recording"

    def __init__(self):
        self.events = []

    async def publish(self, event):
        self.events.append(event)

    async def close(self):
        return None


class RecordingEventsPlugin:
    """Register an instance; ``.sink`` holds the events after the server started."""

    __name__ = "RecordingEventsPlugin"

    def __init__(self):
        self.sink = RecordingSink()

    @hookimpl
    def lakekeeper_event_sinks(self):
        async def build(config, ctx):
            return self.sink

        return [BackendSpec(name="recording", factory=build)]
