// The share link with a copy button (attnviz/app/copy_link.py). The link is set as textContent
// only. The button copies it with navigator.clipboard; where that is missing (a page not served
// over https or from localhost) it selects the link and asks the browser to copy the selection,
// and if that fails too the link stays selected for Ctrl+C.

function selectText(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
}

async function copy(text, el) {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) {
      // fall through to the selection
    }
  }
  selectText(el);
  try {
    return document.execCommand("copy");
  } catch (e) {
    return false;
  }
}

export default function ({ data, parentElement }) {
  let root = parentElement.querySelector(":scope > .attnviz-copy");
  if (!root) {
    root = document.createElement("div");
    root.className = "attnviz-copy";
    root.dataset.attnvizCopy = "";
    const code = document.createElement("code");
    const button = document.createElement("button");
    button.type = "button";
    button.setAttribute("aria-live", "polite");  // "Copied" is read out
    root.append(code, button);
    parentElement.append(root);
    button.addEventListener("click", async () => {
      const state = root.__attnvizCopy;
      const ok = await copy(state.link, code);
      button.textContent = ok ? state.copied : state.failed;
      root.dataset.copied = ok ? "yes" : "no";
      clearTimeout(root.__attnvizReset);
      root.__attnvizReset = setTimeout(() => {
        button.textContent = root.__attnvizCopy.copy;
      }, 2000);
    });
  }
  root.__attnvizCopy = data;
  const [code, button] = root.children;
  code.textContent = data.link;
  button.textContent = data.copy;
  button.title = data.copy;
  delete root.dataset.copied;
}
