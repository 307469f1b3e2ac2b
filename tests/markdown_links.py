#!/usr/bin/env python3
"""lint.markdown_links: every relative link of the repository's markdown resolves, offline.

For each tracked *.md file, each inline link or image [text](target) whose target is not a URL
(http:, https:, mailto:) must name a file or folder of the repository (relative to the page, not
above the repository's root), and its #anchor, when it has one, a heading of the target page
(GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, repeats numbered) or an
explicit <a id="...">. Fenced code blocks and inline code are not read; a link's text may run
over lines.

    markdown_links.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
EXPLICIT = re.compile(r'<a\s+(?:id|name)="([^"]+)"')


def prose_lines(text, keep_code=False):
    """The lines outside fenced code blocks, with inline code removed (or kept: headings)."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r'(`{3,}|~{3,})', stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line if keep_code else re.sub(r'`[^`]*`', '', line)


def slug(heading):
    text = re.sub(r'<[^>]+>', '', heading)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = text.strip().lower()
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for _, line in prose_lines(text, keep_code=True):
            m = HEADING.match(line)
            if m:
                base = slug(m.group(2))
                n = seen.get(base, 0)
                found.add(base if n == 0 else f'{base}-{n}')
                seen[base] = n + 1
        found.update(EXPLICIT.findall(text))
        cache[path] = found
    return cache[path]


def tracked(root):
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '*.md'], capture_output=True,
                             text=True, check=True).stdout.split()
        if out:
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    pages = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(('.', 'build')) and d != 'node_modules']
        pages += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith('.md')]
    return pages


def main():
    root = os.path.realpath(sys.argv[1])
    broken = 0
    pages = tracked(root)
    for page in pages:
        path = os.path.join(root, page)
        with open(path, encoding='utf-8') as f:
            text = f.read()
        # The prose as one text (fenced code blanked, line numbers kept), so that a link whose
        # text runs over two lines is seen too.
        kept = dict(prose_lines(text))
        prose = '\n'.join(kept.get(n, '') for n in range(1, text.count('\n') + 2))
        for match in LINK.finditer(prose):
            target = match.group(1)
            if re.match(r'[a-z][a-z0-9+.-]*:', target, re.I):
                continue
            number = prose.count('\n', 0, match.start()) + 1
            file_part, _, anchor = target.partition('#')
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) \
                if file_part else path
            why = None
            if not (dest == root or dest.startswith(root + os.sep)):
                why = 'points outside the repository'
            elif not os.path.exists(dest):
                why = 'no such file'
            elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                why = f'no heading or anchor #{anchor}'
            if why:
                print(f'{page}:{number}: {target}: {why}')
                broken += 1
    if broken:
        print(f'markdown_links: {broken} broken link(s) in {len(pages)} pages', file=sys.stderr)
        return 1
    print(f'markdown_links: every relative link of {len(pages)} pages resolves')
    return 0


if __name__ == '__main__':
    sys.exit(main())
