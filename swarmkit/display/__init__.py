"""What the user sees: the run's tables, timeline and Markdown, the live view and widget.

Renders records to text/plain and HTML; never calls a model or writes a file. The widget
(``display.widget``) imports ipywidgets, so it is not re-exported here.
"""

from .history import RunDiff, RunListing
from .tables import RunTables

__all__ = ["RunDiff", "RunListing", "RunTables"]
