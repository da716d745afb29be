"""The data the app measures: where it comes from, and the working view every page measures.

What lives where
----------------
folder       the server's data-folder policy (:data:`folder.DATA_DIR_ENV`; reading off unless the
             server names a folder) and the "Local path" source: picker, path box, cached loads.
uploads      uploads read through a temporary file; refused ones let go (:func:`uploads.discard_uploads`).
columns      the chosen file's columns and the loader's detected ones (the sidebar's column boxes).
file_groups  several files as one dataset, one group per file (a folder of them, several uploads).
loading      demos, the source the sidebar asks for, and :func:`loading.ensure_dataset` (the
             previous dataset stays loaded when a new one fails).
search       the sidebar's search and filter (:class:`search.Search`) and the searched dataset.
selection    the linked selection (:class:`selection.Selection`): rows kept or dropped on every page.
view         the working :class:`view.View` (search, groups, seeded subsample, selection) and its key.

This module only re-exports the names pages and helpers use.
"""

from .columns import file_columns, file_key
from .file_groups import GROUP_FILE_SUFFIXES, combine_as_groups, group_files
from .folder import (
    DATA_DIR_ENV,
    LOCAL_SOURCE,
    data_dir,
    folder_files,
    load_path,
    path_input,
    refuse_local_path,
    shown_source,
    sources,
)
from .loading import check_demo_link, demo_names, demo_titles, ensure_dataset, requested_source
from .search import MIN_MATCHES, Search, Searched, current_search, searched, working_dataset
from .selection import (
    SELECTION_KEY,
    SELECTION_LINK_KEY,
    SELECTION_MODES,
    Selection,
    clear_selection,
    current_selection,
    selection_buttons,
    selection_csv,
    use_selection,
)
from .uploads import MAX_UPLOAD_BYTES, discard_uploads, load_upload, load_uploads, release_memory
from .view import View, current_colours, current_view, view_hash

__all__ = [
    "DATA_DIR_ENV", "GROUP_FILE_SUFFIXES", "LOCAL_SOURCE", "MAX_UPLOAD_BYTES", "MIN_MATCHES", "SELECTION_KEY",
    "SELECTION_LINK_KEY", "SELECTION_MODES", "Search", "Searched", "Selection", "View", "check_demo_link",
    "clear_selection", "combine_as_groups", "current_colours", "current_search", "current_selection", "current_view", "data_dir",
    "demo_names", "demo_titles", "discard_uploads", "ensure_dataset", "file_columns", "file_key", "folder_files", "group_files", "load_path",
    "load_upload", "load_uploads", "path_input", "refuse_local_path", "release_memory", "requested_source",
    "searched", "selection_buttons", "selection_csv", "shown_source", "sources", "use_selection", "view_hash", "working_dataset",
]
