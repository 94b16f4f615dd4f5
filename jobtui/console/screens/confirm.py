"""Small modal questions: confirm an action, decide what quitting does to runs in flight."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class ConfirmScreen(ModalScreen[bool]):
    """Ask yes or no; dismisses with True only on an explicit yes."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="yes"),
        Binding("n,escape", "answer(False)", "No", id="no"),
    ]

    def __init__(self, question: str, *, yes: str = "Yes") -> None:
        super().__init__(classes="dialog-screen")
        self.question = question
        self.yes_label = yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question")
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes_label} \\[y]", variant="error", id="yes")
                yield Button("Cancel \\[n]", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


class _ChoiceScreen(ModalScreen[str | None]):
    """A question with a few answers: dismisses with the chosen button's id, or None on
    cancel (the button ``#cancel``, focused first so that Enter never acts)."""

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "cancel" else event.button.id)

    def action_choose(self, choice: str | None) -> None:
        self.dismiss(choice)


class QuitScreen(_ChoiceScreen):
    """Runs are in flight here: wait for them, abort them, or stay."""

    BINDINGS = [
        Binding("w", "choose('wait')", "Wait for them", id="wait"),
        Binding("a", "choose('abort')", "Abort them", id="abort"),
        Binding("c,escape", "choose(None)", "Cancel", id="cancel"),
    ]

    def __init__(self, in_flight: list[str]) -> None:
        super().__init__(classes="dialog-screen")
        self.in_flight = in_flight

    def compose(self) -> ComposeResult:
        names = ", ".join(self.in_flight[:6]) + (" …" if len(self.in_flight) > 6 else "")
        with Vertical(classes="dialog"):
            yield Label(
                f"{len(self.in_flight)} run(s) in flight in this console: {names}.\n"
                "Quitting stops the hosted runners.",
                classes="question",
            )
            with Horizontal(classes="buttons"):
                yield Button("Wait for them \\[w]", variant="primary", id="wait")
                yield Button("Abort them \\[a]", variant="error", id="abort")
                yield Button("Cancel \\[c]", id="cancel")


class AdoptScreen(_ChoiceScreen):
    """Adopt a server event as a jobtui job: take over from it, keep it for now, or cancel.

    Dismisses with "adopt", "keep" or None.
    """

    BINDINGS = [
        Binding("y", "choose('adopt')", "Adopt, disable the event", id="adopt"),
        Binding("k", "choose('keep')", "Adopt, keep the event", id="keep"),
        Binding("n,escape", "choose(None)", "Cancel", id="cancel"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__(classes="dialog-screen")
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.question, classes="question")
            with Horizontal(classes="buttons"):
                yield Button("Adopt \\[y]", variant="error", id="adopt")
                yield Button("Adopt, keep event \\[k]", variant="primary", id="keep")
                yield Button("Cancel \\[n]", id="cancel")
