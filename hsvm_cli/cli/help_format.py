"""Help pages wrapped between words only.

click wraps help text with textwrap's default of breaking after a hyphen, so
at 80 columns an option's name or a command's split across lines
(``--zero-`` / ``based``, ``hsvm fit-`` / ``circulant``): a reader takes the
first half for an option of its own.  Every help page is laid out by
:class:`HelpFormatter` (through :class:`HelpContext`), which wraps at spaces
only."""
import contextlib

import click

__all__ = ["HelpContext", "HelpFormatter"]


@contextlib.contextmanager
def _breaks_at_spaces_only():
    # click.formatting.wrap_text takes click._textwrap.TextWrapper at each
    # call; the help tests pin the outcome, should click move it.
    import click._textwrap as textwrap_module
    base = textwrap_module.TextWrapper

    class WordWrapper(base):
        def __init__(self, *args, **kwargs):
            kwargs["break_on_hyphens"] = False
            super().__init__(*args, **kwargs)

    textwrap_module.TextWrapper = WordWrapper
    try:
        yield
    finally:
        textwrap_module.TextWrapper = base


class HelpFormatter(click.HelpFormatter):
    def write_usage(self, *args, **kwargs):
        with _breaks_at_spaces_only():
            super().write_usage(*args, **kwargs)

    def write_text(self, *args, **kwargs):
        with _breaks_at_spaces_only():
            super().write_text(*args, **kwargs)

    def write_dl(self, *args, **kwargs):
        with _breaks_at_spaces_only():
            super().write_dl(*args, **kwargs)


class HelpContext(click.Context):
    formatter_class = HelpFormatter
