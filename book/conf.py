"""Sphinx's settings for the book, copied into each edition's source folder by the build.

The notebooks arrive executed (the build runs them once for both editions), so myst-nb
only renders them. Everything a page loads is in the built folder: the theme's own files,
the widgets' renderer under _static/widgets (from the npm package the build copies), and
the diagrams drawn as SVG into the pages; nothing comes from a CDN. The edition is a Sphinx
tag: `-t teacher` for the teacher's, none for the student's.
"""

# Sphinx runs this file with `tags` defined; linters do not know it.
# ruff: noqa: F821

project = "MRTR Lab"
author = "MRTR Lab"
TEACHER = tags.has("teacher")  # type: ignore[name-defined]
html_title = f"MRTR Lab: {'teacher’s' if TEACHER else 'student'} edition"

extensions = ["myst_nb"]
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}

# Rendered from the executed notebooks as they are: never executed again here.
nb_execution_mode = "off"
nb_merge_streams = True
# The widgets' renderer from the book's own files (myst-nb's default loads it from CDNs).
nb_ipywidgets_js: dict[str, dict[str, str]] = {"widgets/embed.js": {}}
# GitHub's heading anchors, so the docs' links to a section work in the book too.
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
html_css_files = ["book.css"]
# The page's own controls over the steps the build recorded (book/control_pages.py).
html_js_files = ["controls.js"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
}
