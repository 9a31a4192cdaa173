// The book's own controls (book/control_pages.py): each range input moves over the steps
// recorded when the book was built, and the page shows what the notebook computed at that
// step. One control moves at a time: moving one puts the others back where they started.
document.addEventListener("DOMContentLoaded", () => {
  for (const block of document.querySelectorAll(".control-steps")) {
    const inputs = [...block.querySelectorAll("input[type=range]")];
    const results = [...block.querySelectorAll(".control-steps-result")];
    const show = (moved) => {
      for (const input of inputs) {
        if (input !== moved) input.value = input.dataset.start;
        const label = JSON.parse(input.dataset.labels)[Number(input.value)];
        input.setAttribute("aria-valuetext", label);
        input.parentElement.querySelector("output").textContent = label;
      }
      const index = Number(moved.value);
      const step =
        index === Number(moved.dataset.start) ? "start" : `${moved.dataset.name}=${index}`;
      for (const result of results) result.hidden = result.dataset.step !== step;
    };
    for (const input of inputs) input.addEventListener("input", () => show(input));
  }
});
