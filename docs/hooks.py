"""MkDocs hooks (mkdocs.yml `hooks:`): the site also serves the repository files the docs pages link to.

The pages under docs/ link to the results notebook, the benchmark tables and the plots where they lie in the
repository (`../benchmarks/NOTEBOOK.md`, `../benchmarks/results/*.md`, `../screenshots/*.png`), so the same links work
on a code host and in the site. MkDocs only knows the files of docs/, so `on_files` adds these ones under their
relative names (`../benchmarks/...`), which is what MkDocs resolves those links to, and publishes them under `repo/`.
A link from one of them into docs/ (`../docs/training.md`) becomes `/training.md`, which mkdocs.yml's
`absolute_links: relative_to_docs` resolves among the docs pages.
"""

import os
import posixpath
import re

from mkdocs.structure.files import File, Files, InclusionLevel

# Repository paths (relative to the root) served beside docs/: Markdown is rendered as pages, images copied.
SERVED = (('benchmarks', ('.md',)), ('screenshots', ('.png', '.svg', '.gif', '.jpg')))
NAV = {'../benchmarks/NOTEBOOK.md', '../benchmarks/README.md'}
LINK = re.compile(r'(\]\()([^)\s]+)')


def on_files(files: Files, config) -> Files:
    root = os.path.dirname(os.path.abspath(config['config_file_path']))
    docs_dir = config['docs_dir']
    for folder, extensions in SERVED:
        for directory, subdirectories, names in os.walk(os.path.join(root, folder)):
            subdirectories[:] = sorted(name for name in subdirectories if name not in ('raw', '__pycache__'))
            for name in sorted(names):
                if not name.endswith(extensions):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root).replace(os.sep, '/')
                destination = f'repo/{path}'
                if path.endswith('.md'):
                    destination = f'repo/{path[:-3]}/index.html' if config['use_directory_urls'] else f'repo/{path[:-3]}.html'
                # In the site but outside its navigation (no warning for that), but for the pages mkdocs.yml's nav names.
                inclusion = InclusionLevel.INCLUDED if f'../{path}' in NAV else InclusionLevel.NOT_IN_NAV
                files.append(File(f'../{path}', docs_dir, config['site_dir'], config['use_directory_urls'], dest_uri=destination, inclusion=inclusion))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """In a page from outside docs/, a relative link into docs/ becomes a link relative to the docs."""
    source = page.file.src_uri
    if not source.startswith('../'):
        return markdown

    def relink(match: re.Match) -> str:
        target = match.group(2)
        if '://' in target or target.startswith(('#', '/', 'mailto:')):
            return match.group(0)
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
        if resolved.startswith('../docs/'):
            return match.group(1) + '/' + resolved[len('../docs/'):]
        return match.group(0)

    return LINK.sub(relink, markdown)
