// The page walker of mcp-browser's snapshots (compiled into the binary as a
// C string: mcp/browser/module.mk).  Evaluated in an isolated world of a
// frame, so the page's own scripts neither see it nor break it; it stays
// installed there while the document lives and keeps one number per
// element, so the same element keeps its ref across snapshots.
//
// walk(limit) reads the DOM once (tens of milliseconds for 40,000 elements,
// where Chromium's full accessibility tree takes a second) and answers the
// outline's nodes as JSON, flat like an accessibility tree:
//   {nodeId, parentId, childIds, role, name, value, p: {properties}, backendDOMNodeId}
// where backendDOMNodeId is this world's number of the element.  Roles and
// names follow HTML-AAM and accname closely enough for an outline: implicit
// roles, explicit ones, aria-label(ledby), labels, alt, title, name from
// content.  What no one sees is left out: display none, visibility hidden
// (their visible children stay), aria-hidden, scripts, styles.  Sections
// that content-visibility: auto has not laid out are in (the accessibility
// tree leaves them out, and their text with them).  A frame whose document
// this world cannot reach (another origin) is a node with p.frame set: the
// caller walks it in that frame's own world.
(() => {
	'use strict';
	const ids = new WeakMap();
	const els = new Map();
	let next = 1;
	let swept = 0; /* els.size after the last sweep */

	const SKIP = new Set(['script', 'style', 'noscript', 'template', 'head', 'meta', 'link', 'title',
		'base', 'param', 'source', 'track', 'datalist', 'colgroup', 'col', 'br', 'wbr']);
	const FROM_CONTENT = new Set(['button', 'link', 'heading', 'cell', 'gridcell', 'columnheader',
		'rowheader', 'option', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'treeitem',
		'checkbox', 'radio', 'switch', 'tooltip', 'DisclosureTriangle', 'term']);
	const SIMPLE = {
		article: 'article', aside: 'complementary', nav: 'navigation', main: 'main', search: 'search',
		form: 'form', button: 'button', details: 'group', summary: 'DisclosureTriangle',
		dialog: 'dialog', fieldset: 'group', figure: 'figure', hr: 'separator', option: 'option',
		optgroup: 'group', textarea: 'textbox', li: 'listitem', ul: 'list', ol: 'list', menu: 'list',
		dl: 'list', dt: 'term', dd: 'definition', dfn: 'term', caption: 'caption', p: 'paragraph',
		blockquote: 'blockquote', code: 'code', strong: 'strong', em: 'emphasis', mark: 'mark',
		del: 'deletion', s: 'deletion', ins: 'insertion', sub: 'subscript', sup: 'superscript',
		time: 'time', output: 'status', progress: 'progressbar', meter: 'meter', iframe: 'Iframe',
		frame: 'Iframe', video: 'video', audio: 'audio', math: 'math',
		h1: 'heading', h2: 'heading', h3: 'heading', h4: 'heading', h5: 'heading', h6: 'heading',
	};
	const INPUT = {
		button: 'button', submit: 'button', reset: 'button', image: 'button', file: 'button',
		checkbox: 'checkbox', radio: 'radio', range: 'slider', number: 'spinbutton',
		search: 'searchbox', color: 'button',
	};
	const EMPTY = new Set(['paragraph', 'generic', 'list', 'listitem', 'blockquote', 'term', 'definition',
		'code', 'strong', 'emphasis', 'mark', 'caption', 'group', 'article', 'figure', 'subscript',
		'superscript', 'insertion', 'deletion', 'time', 'LayoutTable', 'LayoutTableRow', 'LayoutTableCell']);
	const FORM = new Set(['input', 'button', 'select', 'textarea', 'option', 'optgroup', 'fieldset']);
	// roles whose nodes hold nothing of their own (the outline lifts their children)
	const PLAIN = new Set(['', 'generic', 'none', 'presentation', 'rowgroup']);

	function idOf(el) {
		let id = ids.get(el);
		if (!id) {
			id = next++;
			ids.set(el, id);
			els.set(id, new WeakRef(el));
		}
		return id;
	}

	function squash(t) {
		return t.replace(/\s+/g, ' ').trim();
	}

	// A layout table (a grid for placing things) rather than one of data:
	// Chromium's rule of thumb, shortened.  Asked for the table and each of
	// its rows and cells, so the verdict is kept for the walk.
	let layouts = new WeakMap();
	function layoutTable(t) {
		let v = layouts.get(t);
		if (v === undefined) {
			v = isLayoutTable(t);
			layouts.set(t, v);
		}
		return v;
	}

	function isLayoutTable(t) {
		if (t.caption || t.tHead || t.tFoot || t.getAttribute('summary') || t.querySelector(':scope > colgroup'))
			return false;
		if (t.rows.length >= 20)
			return false;
		for (const r of t.rows)
			for (const c of r.cells)
				if (c.localName === 'th' || c.getAttribute('scope') || c.getAttribute('headers') ||
				    c.getAttribute('abbr'))
					return false;
		return true;
	}

	function tableOf(el) {
		const t = el.closest('table');
		return t && !t.getAttribute('role') ? t : null;
	}

	function implicitRole(el, tag) {
		const r = SIMPLE[tag];
		if (r)
			return r;
		switch (tag) {
		case 'a':
		case 'area':
			return el.hasAttribute('href') ? 'link' : '';
		case 'header':
		case 'footer':
			return el.parentElement && el.parentElement.closest('article,aside,main,nav,section')
				? '' : tag === 'header' ? 'banner' : 'contentinfo';
		case 'section':
			return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ||
				el.hasAttribute('title') ? 'region' : '';
		case 'img':
			return el.getAttribute('alt') === '' ? 'none' : 'img';
		case 'svg':
			return 'img';
		case 'input': {
			const t = el.type;
			if (t === 'hidden')
				return 'hidden';
			return INPUT[t] || (el.list ? 'combobox' : 'textbox');
		}
		case 'select':
			return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
		case 'table':
			return layoutTable(el) ? 'LayoutTable' : 'table';
		case 'tr': {
			const t = tableOf(el);
			return t && layoutTable(t) ? 'LayoutTableRow' : 'row';
		}
		case 'td':
		case 'th': {
			const t = tableOf(el);
			if (t && layoutTable(t))
				return 'LayoutTableCell';
			if (tag === 'td')
				return 'cell';
			const scope = el.getAttribute('scope');
			return scope === 'row' || scope === 'rowgroup' ? 'rowheader' : 'columnheader';
		}
		}
		return '';
	}

	function roleOf(el, tag) {
		const attr = el.getAttribute('role');
		if (attr) {
			const r = attr.trim().split(/\s+/)[0].toLowerCase();
			if (r)
				return r;
		}
		return implicitRole(el, tag);
	}

	// The text an element's name is made of: its text, alt texts, values,
	// without what is hidden.
	function textOf(el, skip) {
		let out = '';
		const add = (n) => {
			if (out.length > 2000)
				return;
			if (n.nodeType === 3) {
				out += n.data;
				return;
			}
			if (n.nodeType !== 1 || n === skip)
				return;
			const tag = n.localName;
			if (SKIP.has(tag)) {
				if (tag === 'br')
					out += ' ';
				return;
			}
			if (n.getAttribute('aria-hidden') === 'true')
				return;
			const cs = getComputedStyle(n);
			if (cs.display === 'none')
				return;
			const al = n.getAttribute('aria-label');
			if (al && al.trim()) {
				out += ' ' + al + ' ';
				return;
			}
			if (tag === 'img' || tag === 'area') {
				out += n.getAttribute('alt') || '';
				return;
			}
			if (tag === 'input' || tag === 'textarea' || tag === 'select') {
				out += ' ' + (tag === 'select' ? (n.selectedOptions[0] || {}).text || '' : n.value) + ' ';
				return;
			}
			const block = cs.display !== 'inline';
			if (block)
				out += ' ';
			for (const c of kidsOf(n))
				add(c);
			if (block)
				out += ' ';
		};
		for (const c of kidsOf(el))
			add(c);
		return squash(out);
	}

	function labelledBy(el) {
		const v = el.getAttribute('aria-labelledby');
		if (!v)
			return '';
		const root = el.getRootNode();
		const parts = [];
		for (const id of v.trim().split(/\s+/)) {
			const r = root.getElementById ? root.getElementById(id) : null;
			if (r)
				parts.push(r.getAttribute('aria-label') || textOf(r, null));
		}
		return squash(parts.join(' '));
	}

	function nameOf(el, tag, role) {
		let n = labelledBy(el);
		if (n)
			return n;
		n = el.getAttribute('aria-label');
		if (n && n.trim())
			return squash(n);
		if (tag === 'input' || tag === 'textarea' || tag === 'select') {
			const t = el.type;
			if (t === 'button' || t === 'submit' || t === 'reset')
				return el.value || (t === 'submit' ? 'Submit' : t === 'reset' ? 'Reset' : '');
			if (t === 'image')
				return el.alt || el.value || 'Submit';
			if (el.labels && el.labels.length) {
				n = squash([...el.labels].map((l) => textOf(l, el)).join(' '));
				if (n)
					return n;
			}
			return el.getAttribute('title') || el.getAttribute('placeholder') || '';
		}
		if (tag === 'img' || tag === 'area')
			return el.getAttribute('alt') || el.getAttribute('title') || '';
		if (tag === 'svg') {
			const t = el.querySelector(':scope > title');
			return t ? squash(t.textContent) : '';
		}
		if (tag === 'fieldset' || tag === 'figure' || tag === 'table') {
			const c = tag === 'table' ? el.caption
				: el.querySelector(tag === 'fieldset' ? ':scope > legend' : ':scope > figcaption');
			if (c)
				return textOf(c, null);
		}
		if (FROM_CONTENT.has(role)) {
			n = textOf(el, null);
			if (n)
				return n;
		}
		return el.getAttribute('title') || '';
	}

	function valueOf(el, tag, role) {
		if (tag === 'select')
			return squash([...el.selectedOptions].map((o) => o.text).join(', '));
		if (tag === 'input' || tag === 'textarea') {
			if (role !== 'textbox' && role !== 'searchbox' && role !== 'combobox' &&
			    role !== 'spinbutton' && role !== 'slider')
				return '';
			return el.type === 'password' ? '•'.repeat(el.value.length) : el.value;
		}
		if (role === 'textbox' && el.isContentEditable)
			return el.innerText;
		return '';
	}

	function kidsOf(n) {
		if (n.shadowRoot)
			return n.shadowRoot.childNodes;
		if (n.localName === 'slot') {
			const a = n.assignedNodes({flatten: true});
			if (a.length)
				return a;
		}
		return n.childNodes;
	}

	// where editing starts (its inside is text, not controls)
	function editRoot(el) {
		return el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable);
	}

	function tristate(v) {
		return v === 'true' || v === 'false' || v === 'mixed' ? v : undefined;
	}

	function props(el, tag, role, focus) {
		const p = {};
		let v;
		if (role === 'heading') {
			v = parseInt(el.getAttribute('aria-level') || tag.slice(1), 10);
			if (v > 0)
				p.level = v;
		}
		if (tag === 'input' && (el.type === 'checkbox' || el.type === 'radio'))
			p.checked = el.indeterminate ? 'mixed' : String(el.checked);
		else if ((v = tristate(el.getAttribute('aria-checked'))))
			p.checked = v;
		if ((v = tristate(el.getAttribute('aria-pressed'))))
			p.pressed = v;
		if ((FORM.has(tag) && el.matches(':disabled')) || el.getAttribute('aria-disabled') === 'true')
			p.disabled = true;
		if (tag === 'summary' && el.parentElement && el.parentElement.localName === 'details')
			p.expanded = el.parentElement.open;
		else if ((v = el.getAttribute('aria-expanded')) === 'true' || v === 'false')
			p.expanded = v === 'true';
		if ((tag === 'option' && el.selected) || el.getAttribute('aria-selected') === 'true')
			p.selected = true;
		if (focus.has(el))
			p.focused = true;
		if (role === 'link' && el.href)
			p.url = typeof el.href === 'string' ? el.href : el.href.baseVal;
		if (el.hasAttribute('tabindex') || editRoot(el)) {
			p.focusable = true;
			if (el.isContentEditable)
				p.editable = 'richtext';
		}
		return p;
	}

	// The selectors of the rules that give ::before or ::after a content,
	// without the pseudo-element: '' when none, '*' when a style sheet
	// cannot be read (another origin's).
	function pseudoRules(doc) {
		const sels = [];
		const pe = /::?(before|after)\b/g;
		const scan = (rules) => {
			for (const r of rules) {
				if (!r.selectorText) {
					if (r.cssRules)
						scan(r.cssRules);
					continue;
				}
				const c = r.style && r.style.content;
				if (!c || c === 'none' || c === 'normal' || !/::?(before|after)/.test(r.selectorText))
					continue;
				for (const part of r.selectorText.split(','))
					if (/::?(before|after)/.test(part))
						sels.push(part.replace(pe, '').trim() || '*');
			}
		};
		try {
			for (const sh of doc.styleSheets)
				scan(sh.cssRules);
		} catch (e) {
			return '*';
		}
		return sels.join(',');
	}

	// limit: stop after that many nodes (0: none), the answer says so
	function walk(limit) {
		const t0 = performance.now();
		layouts = new WeakMap(); // a page may have changed since the last walk
		const doc = document;
		const nodes = [];
		let seq = 0;
		// what has the keyboard focus: in a document that has it, not
		// the frame it is inside of
		const focus = new Set();
		const focusIn = (d) => {
			let f = d.hasFocus() ? d.activeElement : null;
			while (f && f.shadowRoot && f.shadowRoot.activeElement)
				f = f.shadowRoot.activeElement;
			if (f && f !== d.body && f.localName !== 'iframe' && f.localName !== 'frame')
				focus.add(f);
		};
		focusIn(doc);

		const make = (parent, role, name) => {
			const n = {nodeId: String(++seq), role};
			if (name)
				n.name = name;
			if (parent) {
				n.parentId = parent.nodeId;
				(parent.childIds || (parent.childIds = [])).push(n.nodeId);
			}
			nodes.push(n);
			return n;
		};
		// The text of a run of text nodes, lifted elements between them, is one node.
		let lastText = null;

		const text = (parent, t) => {
			t = t.replace(/\s+/g, ' ');
			if (lastText && lastText.parentId === parent.nodeId &&
			    parent.childIds[parent.childIds.length - 1] === lastText.nodeId)
				lastText.name += t;
			else
				lastText = make(parent, 'StaticText', t);
		};
		// CSS generated text (::before, ::after) is part of what shows;
		// only elements a rule with content can match are asked
		const pseudo = pseudoRules(doc);
		const generated = (c, which) => {
			if (pseudo !== '*') {
				try {
					if (!pseudo || !c.matches(pseudo))
						return '';
				} catch (e) {
					return '';
				}
			}
			const v = getComputedStyle(c, which).content;
			if (v && v[0] === '"' && v.length > 2) {
				const t = v.slice(1, -1).replace(/\\(.)/g, '$1');
				return /\S/.test(t) ? t : '';
			}
			return '';
		};
		const visit = (el, parent, visible) => {
			for (const c of kidsOf(el))
				visitOne(c, parent, visible);
		};
		let truncated = false;
		const visitOne = (c, parent, visible) => {
			if (limit && nodes.length >= limit) {
				truncated = true;
				return;
			}
			if (c.nodeType === 3) {
				if (visible && /\S/.test(c.data))
					text(parent, c.data);
				return;
			}
			if (c.nodeType !== 1)
				return;
			const tag = c.localName;
			if (SKIP.has(tag) || c.getAttribute('aria-hidden') === 'true')
				return;
			const cs = getComputedStyle(c);
			if (cs.display === 'none' || cs.contentVisibility === 'hidden')
				return;
			const shown = cs.visibility === 'visible';
			let role = roleOf(c, tag);
			if (role === 'hidden')
				return;
			// a label's text is its control's name: only the control shows
			if (tag === 'label' && c.control && !c.hasAttribute('tabindex') &&
			    !c.control.hasAttribute('aria-label') && !c.control.hasAttribute('aria-labelledby')) {
				if (c.contains(c.control))
					visitOne(c.control, parent, shown);
				return;
			}
			if (tag === 'svg' || tag === 'math') {
				const name = shown ? nameOf(c, tag, role) : '';
				if (name) {
					make(parent, role, name).backendDOMNodeId = idOf(c);
					lastText = null;
				}
				return;
			}
			const focusable = c.hasAttribute('tabindex') || editRoot(c);
			const named = c.hasAttribute('aria-label') || c.hasAttribute('aria-labelledby');
			const inside = (into) => {
				if (!shown)
					return visit(c, into, false);
				const before = generated(c, '::before');
				if (before)
					text(into, before);
				if (tag === 'details' && !c.open) {
					// closed: only its summary shows
					const sum = c.querySelector(':scope > summary');
					if (sum)
						visitOne(sum, into, true);
				} else {
					visit(c, into, true);
				}
				const after = generated(c, '::after');
				if (after)
					text(into, after);
			};
			if (!shown || ((role === 'none' || role === 'presentation') && !focusable) ||
			    (PLAIN.has(role) && !focusable && !named)) {
				// a block's text does not run on into its neighbours'
				const block = cs.display !== 'inline' && cs.display !== 'contents';
				if (block)
					lastText = null;
				inside(parent);
				if (block && lastText) {
					lastText.name += ' ';
					lastText = null;
				}
				return;
			}
			if (PLAIN.has(role))
				role = 'generic';
			const n = make(parent, role, nameOf(c, tag, role));
			lastText = null;
			n.backendDOMNodeId = idOf(c);
			const value = valueOf(c, tag, role);
			if (value)
				n.value = value;
			const p = props(c, tag, role, focus);
			for (const k in p) {
				n.p = p;
				break;
			}
			if (role === 'Iframe') {
				let inner = null;
				try {
					inner = c.contentDocument;
				} catch (e) {
					inner = null;
				}
				if (inner && inner.documentElement) {
					focusIn(inner);
					visit(inner.body || inner.documentElement, n, true);
				} else {
					(n.p || (n.p = {})).frame = true;
				}
			} else if ((tag !== 'select' || role === 'listbox') && tag !== 'textarea' && tag !== 'input') {
				inside(n);
			}
			lastText = null;
			// a container left empty says nothing
			if (!n.childIds && !n.name && !n.value && !n.p && EMPTY.has(role)) {
				nodes.pop();
				parent.childIds.pop();
			}
		};
		const root = make(null, 'RootWebArea', doc.title);
		root.backendDOMNodeId = idOf(doc.documentElement);
		if (doc.body || doc.documentElement)
			visit(doc.body || doc.documentElement, root, true);
		// numbers of elements gone from the page are forgotten when the
		// table has doubled since it was last swept
		if (els.size > 50000 && els.size > 2 * swept) {
			for (const [k, r] of els)
				if (!r.deref())
					els.delete(k);
			swept = els.size;
		}
		return JSON.stringify({url: location.href, title: doc.title, truncated,
			ms: Math.round(performance.now() - t0), nodes});
	}

	function get(id) {
		const r = els.get(id);
		const el = r && r.deref();
		return el && el.isConnected ? el : null;
	}

	return {walk, get};
})()
