// @ts-check
// The chat webview. Renders blocks sent by the extension host (which keeps the
// transcript) and sends back what the user does. Every piece of text from the model,
// tools or the user goes into the DOM through textContent / createTextNode: no innerHTML.
(function () {
  // @ts-ignore: provided by VS Code inside webviews
  const vscode = acquireVsCodeApi();
  const transcript = /** @type {HTMLElement} */ (document.getElementById('transcript'));
  const input = /** @type {HTMLTextAreaElement} */ (document.getElementById('input'));
  const stop = /** @type {HTMLButtonElement} */ (document.getElementById('stop'));
  const context = /** @type {HTMLElement} */ (document.getElementById('context'));
  const contextLabel = /** @type {HTMLElement} */ (document.getElementById('context-label'));
  const suggestions = /** @type {HTMLElement} */ (document.getElementById('suggestions'));
  const live = /** @type {HTMLElement} */ (document.getElementById('live'));
  const queueList = /** @type {HTMLElement} */ (document.getElementById('queue'));
  const backgroundList = /** @type {HTMLElement} */ (document.getElementById('background'));
  const busy = /** @type {HTMLElement} */ (document.getElementById('busy'));
  let running = false;

  const marks = { pending: '○', in_progress: '◐', completed: '✓', failed: '✗' };

  /** @param {string} tag @param {string} [cls] @param {string} [text] */
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** Inline markdown: `code` and **bold**; everything else is text. */
  function inline(parent, text) {
    const re = /(`[^`\n]+`|\*\*[^*\n]+\*\*)/g;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      const token = m[0];
      if (token.startsWith('`')) parent.appendChild(el('code', undefined, token.slice(1, -1)));
      else parent.appendChild(el('strong', undefined, token.slice(2, -2)));
      last = m.index + token.length;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  /** A small markdown subset, enough for answers: fences, headings, lists, paragraphs.
   *  Re-run on the whole block for each streamed chunk (an unclosed fence renders as code). */
  function markdown(parent, text) {
    const lines = text.split('\n');
    let i = 0;
    let para = [];
    const flush = () => {
      if (para.length) {
        const p = el('p');
        inline(p, para.join('\n'));
        parent.appendChild(p);
        para = [];
      }
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s*```(\S*)/.exec(line);
      if (fence) {
        flush();
        const code = [];
        i++;
        while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) code.push(lines[i++]);
        i++;
        const box = el('div', 'codeblock');
        const pre = el('pre');
        const c = el('code', fence[1] ? 'language-' + fence[1] : undefined, code.join('\n'));
        pre.appendChild(c);
        const copy = el('button', 'copy', 'Copy');
        copy.addEventListener('click', () => vscode.postMessage({ type: 'copy', text: code.join('\n') }));
        box.appendChild(copy);
        box.appendChild(pre);
        parent.appendChild(box);
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      const item = /^\s*(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
      if (heading) {
        flush();
        const h = el('h' + Math.min(heading[1].length + 2, 6));
        inline(h, heading[2]);
        parent.appendChild(h);
      } else if (item) {
        flush();
        let list = parent.lastChild;
        if (!list || list.nodeName !== 'UL') {
          list = parent.appendChild(el('ul'));
        }
        const li = el('li');
        inline(li, item[1]);
        list.appendChild(li);
      } else if (line.trim() === '') {
        flush();
      } else {
        para.push(line);
      }
      i++;
    }
    flush();
  }

  /** Open/closed state of tool rows survives re-rendering of the row. */
  const openTools = new Set();

  function render(block) {
    switch (block.type) {
      case 'user': {
        // Hover actions: "Rewind to here", "Fork from here" (the extension previews) and
        // "Review from here" (the changes of this turn and the ones after it).
        const div = el('div', 'block user', block.text);
        const actions = el('div', 'actions');
        for (const [type, label] of [['rewind', 'Rewind to here'], ['fork', 'Fork from here'], ['review', 'Review from here']]) {
          const button = el('button', type, label);
          button.addEventListener('click', () => vscode.postMessage({ type, index: Number(div.dataset.index) }));
          actions.appendChild(button);
        }
        div.appendChild(actions);
        return div;
      }
      case 'agent': {
        const div = el('div', 'block agent');
        markdown(div, block.text);
        return div;
      }
      case 'thought':
        return el('div', 'block thought', block.text);
      case 'tool': {
        const details = /** @type {HTMLDetailsElement} */ (el('details', 'block tool ' + block.status));
        details.dataset.id = block.id;
        // A task with subagent calls starts open (its group is what it shows); others closed.
        const hasChildren = !!(block.children && block.children.length);
        details.open = hasChildren ? !openTools.has(block.id + ':closed') : openTools.has(block.id);
        details.addEventListener('toggle', () => {
          if (details.open) {
            openTools.add(block.id);
            openTools.delete(block.id + ':closed');
          } else {
            openTools.delete(block.id);
            openTools.add(block.id + ':closed');
          }
        });
        const summary = el('summary');
        summary.appendChild(el('span', 'status', marks[block.status] || marks.pending));
        summary.appendChild(document.createTextNode(' ' + block.title));
        details.appendChild(summary);
        if (block.children && block.children.length) {
          // A subagent's calls: a collapsible group under its task call.
          const group = /** @type {HTMLDetailsElement} */ (el('details', 'subagent'));
          const key = 'sub:' + block.id;
          group.open = !openTools.has(key + ':closed');
          group.addEventListener('toggle', () => {
            if (group.open) openTools.delete(key + ':closed');
            else openTools.add(key + ':closed');
          });
          const n = block.children.length;
          group.appendChild(el('summary', undefined, n + (n === 1 ? ' call' : ' calls') + ' by the subagent'));
          const ul = el('ul');
          for (const child of block.children) {
            ul.appendChild(el('li', child.status, (marks[child.status] || marks.pending) + ' ' + child.title));
          }
          group.appendChild(ul);
          details.appendChild(group);
        }
        if (block.output) details.appendChild(el('pre', undefined, block.output));
        return details;
      }
      case 'plan': {
        const div = el('div', 'block plan');
        div.appendChild(el('strong', undefined, 'Plan'));
        const ul = el('ul');
        for (const entry of block.entries) {
          const box = entry.status === 'completed' ? '☑' : entry.status === 'in_progress' ? '◐' : '☐';
          ul.appendChild(el('li', entry.status, box + ' ' + entry.content));
        }
        div.appendChild(ul);
        return div;
      }
      case 'notice':
        return el('div', 'block notice ' + block.level, block.text);
      default:
        return el('div', 'block');
    }
  }

  function atEnd() {
    return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 30;
  }

  function place(index, block) {
    const node = render(block);
    node.dataset.index = String(index);
    const existing = transcript.children[index];
    if (existing) transcript.replaceChild(node, existing);
    else transcript.appendChild(node);
  }

  function setRunning(value) {
    running = value;
    stop.hidden = !running;
    busy.hidden = !running;
  }

  /** The queue (each message with a withdraw button) and the background commands (each
   *  running one with a Stop button), above the input. */
  function renderLive(queue, background) {
    queueList.replaceChildren();
    for (const item of queue) {
      const row = el('div', 'live-row ' + item.kind);
      row.appendChild(el('span', 'live-kind', item.kind === 'steering' ? '↳ steering' : '⏳ queued'));
      row.appendChild(el('span', 'live-text', item.text.split('\n')[0]));
      const withdraw = el('button', 'live-action', 'Withdraw');
      withdraw.title = 'Withdraw it before it is used';
      withdraw.addEventListener('click', () => vscode.postMessage({ type: 'unqueue', id: item.id }));
      row.appendChild(withdraw);
      queueList.appendChild(row);
    }
    backgroundList.replaceChildren();
    for (const command of background) {
      const row = el('div', 'live-row background ' + command.state);
      const state = command.state === 'running' ? 'running' : 'exited ' + (command.exitCode ?? '?');
      row.appendChild(el('span', 'live-kind', command.id + ' ' + state));
      row.appendChild(el('span', 'live-text', command.command));
      if (command.state === 'running') {
        const kill = el('button', 'live-action', 'Stop');
        kill.title = 'Stop this background command';
        kill.addEventListener('click', () => vscode.postMessage({ type: 'killBackground', id: command.id }));
        row.appendChild(kill);
      }
      backgroundList.appendChild(row);
    }
    live.hidden = queue.length === 0 && background.length === 0;
  }

  /** Sends the input; while a turn runs `how` says steer (the default) or queue. */
  function sendInput(how) {
    const text = input.value.trim();
    if (!text && !pendingImages.length) return;
    /** @type {{type: 'send', text: string, how?: string, images?: {mimeType: string, data: string}[]}} */
    const message = { type: 'send', text };
    if (running) message.how = how;
    if (pendingImages.length) {
      message.images = pendingImages.map(({ mimeType, data }) => ({ mimeType, data }));
    }
    vscode.postMessage(message);
    input.value = '';
    context.hidden = true;
    pendingImages = [];
    showImages();
  }

  window.addEventListener('message', (event) => {
    const msg = event.data;
    const follow = atEnd();
    switch (msg.type) {
      case 'reset':
        transcript.replaceChildren();
        msg.blocks.forEach((b, i) => place(i, b));
        setRunning(msg.running);
        break;
      case 'blocks':
        for (const change of msg.changes) place(change.index, change.block);
        setRunning(msg.running);
        break;
      case 'running':
        setRunning(msg.running);
        break;
      case 'commands':
        commands = msg.commands;
        suggest();
        break;
      case 'live':
        renderLive(msg.queue, msg.background);
        break;
      case 'worktree': {
        const label = /** @type {HTMLElement} */ (document.getElementById('worktree'));
        const apply = /** @type {HTMLElement} */ (document.getElementById('apply-worktree'));
        label.hidden = apply.hidden = !msg.label;
        label.textContent = msg.label ? msg.label.text : '';
        label.title = msg.label ? msg.label.title : '';
        break;
      }
      case 'prefill':
        input.value = msg.text;
        context.hidden = !msg.context;
        contextLabel.textContent = msg.context ? 'Attached: ' + msg.context : '';
        if (msg.images && msg.images.length) {
          // A refused prompt's images, attached again.
          for (const image of msg.images) {
            pendingImages.push({ name: `image ${pendingImages.length + 1}`, mimeType: image.mimeType, data: image.data });
          }
          showImages();
        }
        input.focus();
        input.setSelectionRange(input.value.length, input.value.length);
        break;
    }
    if (follow) transcript.scrollTop = transcript.scrollHeight;
  });

  // ---- `/` suggestions: the server's slash commands (agent/session/commands) ----
  /** @type {{name: string, description: string, argumentHint: string | null, source: string}[] | undefined} */
  let commands;
  let selected = 0;
  /** @type {typeof commands} */
  let shown = [];

  /** The name typed so far when the input is `/name` (no space yet), else undefined. */
  function typedCommand() {
    const m = /^\/(\S*)$/.exec(input.value);
    return m ? m[1] : undefined;
  }

  function hideSuggestions() {
    suggestions.hidden = true;
    suggestions.replaceChildren();
    shown = [];
  }

  function suggest() {
    const typed = typedCommand();
    if (typed === undefined || !commands) {
      hideSuggestions();
      return;
    }
    shown = commands.filter((c) => c.name.startsWith(typed));
    if (!shown.length) {
      hideSuggestions();
      return;
    }
    selected = Math.min(selected, shown.length - 1);
    suggestions.replaceChildren();
    shown.forEach((command, i) => {
      const row = el('div', 'suggestion' + (i === selected ? ' selected' : ''));
      row.setAttribute('role', 'option');
      row.dataset.name = command.name;
      row.appendChild(el('span', 'name', '/' + command.name));
      if (command.argumentHint) row.appendChild(el('span', 'hint', command.argumentHint));
      row.appendChild(el('span', 'description', command.description));
      row.appendChild(el('span', 'source', command.source));
      row.addEventListener('mousedown', (event) => {
        event.preventDefault();
        accept(i);
      });
      suggestions.appendChild(row);
    });
    suggestions.hidden = false;
  }

  /** @param {number} i */
  function accept(i) {
    const command = shown[i];
    if (!command) return;
    input.value = '/' + command.name + ' ';
    input.setSelectionRange(input.value.length, input.value.length);
    hideSuggestions();
    input.focus();
  }

  input.addEventListener('input', () => {
    if (typedCommand() === undefined) {
      hideSuggestions();
      return;
    }
    if (input.value === '/') {
      // Asked again at each new `/`, so an added command file shows.
      selected = 0;
      vscode.postMessage({ type: 'commands' });
    }
    suggest();
  });

  input.addEventListener('keydown', (event) => {
    if (!suggestions.hidden && shown.length) {
      if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        selected = (selected + (event.key === 'ArrowDown' ? 1 : shown.length - 1)) % shown.length;
        suggest();
        return;
      }
      if (event.key === 'Tab' || (event.key === 'Enter' && !event.shiftKey && !event.isComposing)) {
        event.preventDefault();
        accept(selected);
        return;
      }
      if (event.key === 'Escape') {
        event.preventDefault();
        hideSuggestions();
        return;
      }
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      sendInput(event.altKey ? 'queue' : 'steer');
    }
  });
  document.getElementById('steer')?.addEventListener('click', () => sendInput('steer'));
  document.getElementById('queue-send')?.addEventListener('click', () => sendInput('queue'));

  // Images pasted or dropped into the input: read as base64, shown as chips until sent
  // (the extension and the server check them again).
  const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
  const MAX_IMAGES = 8;
  const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
  const imagesStrip = /** @type {HTMLElement} */ (document.getElementById('images'));
  /** @type {{name: string, mimeType: string, data: string}[]} */
  let pendingImages = [];
  function showImages() {
    imagesStrip.replaceChildren();
    imagesStrip.hidden = pendingImages.length === 0;
    pendingImages.forEach((image, index) => {
      const chip = document.createElement('span');
      chip.className = 'image-chip';
      chip.textContent = image.name;
      const remove = document.createElement('button');
      remove.textContent = '×';
      remove.title = 'Do not send this image';
      remove.addEventListener('click', () => {
        pendingImages.splice(index, 1);
        showImages();
      });
      chip.appendChild(remove);
      imagesStrip.appendChild(chip);
    });
  }
  /** @param {File} file */
  function addImage(file) {
    if (!IMAGE_TYPES.includes(file.type)) {
      return false;
    }
    if (pendingImages.length >= MAX_IMAGES || file.size > MAX_IMAGE_BYTES) {
      imagesStrip.hidden = false;
      imagesStrip.title = `at most ${MAX_IMAGES} images of 5 MB each`;
      return true;
    }
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      const data = url.slice(url.indexOf(',') + 1);
      pendingImages.push({ name: file.name || `image ${pendingImages.length + 1}`, mimeType: file.type, data });
      showImages();
    };
    reader.readAsDataURL(file);
    return true;
  }
  input.addEventListener('paste', (event) => {
    const files = Array.from(event.clipboardData?.files ?? []);
    if (files.map(addImage).some(Boolean)) {
      event.preventDefault();
    }
  });
  input.addEventListener('dragover', (event) => {
    if (Array.from(event.dataTransfer?.items ?? []).some((item) => item.kind === 'file')) {
      event.preventDefault();
    }
  });
  input.addEventListener('drop', (event) => {
    const files = Array.from(event.dataTransfer?.files ?? []);
    if (files.map(addImage).some(Boolean)) {
      event.preventDefault();
    }
  });
  stop.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
  document.getElementById('new')?.addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
  document.getElementById('sessions')?.addEventListener('click', () => vscode.postMessage({ type: 'sessions' }));
  document.getElementById('apply-worktree')?.addEventListener('click', () => vscode.postMessage({ type: 'applyWorktree' }));
  document.getElementById('context-clear')?.addEventListener('click', () => {
    context.hidden = true;
    vscode.postMessage({ type: 'clearContext' });
  });
  vscode.postMessage({ type: 'ready' });
})();
