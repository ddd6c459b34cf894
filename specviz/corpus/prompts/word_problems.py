"""Word problems: rates, percentages, ages, money, geometry, units, combinatorics and probability."""

from __future__ import annotations

from specviz.corpus.prompts.math_templates import Problem

WORD_PROBLEMS: tuple[Problem, ...] = (
    Problem("trip-time", "{A} drives {d} km at an average speed of {v} km/h. How long does the trip take, in hours "
                         "and minutes?", {"d": (60, 900, 15), "v": (40, 130, 5)}),
    Problem("trains-meet", "Two trains leave stations {d} km apart at the same time and travel toward each other, one"
                           " at {v1} km/h and the other at {v2} km/h. When do they meet, and how far has the faster "
                           "train travelled?", {"d": (100, 800, 20), "v1": (50, 140, 10), "v2": (40, 120, 10)}),
    Problem("paint-together", "{A} can paint a fence alone in {x} hours, and {B} can paint it alone in {y} hours. How"
                              " long will it take if they work together?", {"x": (2, 12), "y": (3, 15)}),
    Problem("tank-leak", "A tank holds {cap} litres. A pipe fills it at {r1} litres per minute, but a leak drains "
                         "{r2} litres per minute. Starting empty, how long until the tank is full?",
            {"cap": (200, 3000, 50), "r1": (20, 80), "r2": lambda v, r: r.randint(2, v["r1"] - 5)}),
    Problem("discount-tax", "A {thing} costs ${p} and is on sale for {d}% off. Sales tax of {t}% is added to the sale"
                            " price. What does {A} pay at the till?",
            {"thing": ("jacket", "bicycle", "coffee machine", "pair of boots", "desk lamp", "backpack", "tent"),
             "p": (20, 400, 5), "d": (10, 60, 5), "t": (5, 20)}),
    Problem("up-then-down", "A shop raises the price of a ${p} item by {u}%, and a month later cuts the new price by "
                            "{d}%. Is the final price higher or lower than the original, and by how much?",
            {"p": (40, 500, 10), "u": (10, 50, 5), "d": (10, 50, 5)}),
    Problem("population-growth", "The population of a town grew from {p1} to {p2} in {n} years. By what percentage "
                                 "did it grow in total, and roughly how much per year?",
            {"p1": (2000, 90000, 500), "p2": lambda v, r: v["p1"] + r.randint(1, 40) * v["p1"] // 100, "n": (2, 15)}),
    Problem("compound", "{A} puts ${p} into a savings account that pays {r}% interest per year, compounded yearly. "
                        "How much will be in the account after {n} years, and how much of that is interest?",
            {"p": (500, 20000, 100), "r": (1.0, 7.5, 0.5), "n": (2, 20)}),
    Problem("simple-loan", "{A} borrows ${p} at a simple interest rate of {r}% per year and repays everything after "
                           "{n} months. How much does {A} repay in total?",
            {"p": (200, 15000, 100), "r": (2, 18), "n": (3, 48, 3)}),
    Problem("ages-sum", "{A} is {d} years older than {B}. In {k} years, the sum of their ages will be {s}. How old is"
                        " each of them now?",
            {"y": (3, 40), "d": (1, 30), "k": (2, 15), "s": lambda v, r: 2 * (v["y"] + v["k"]) + v["d"]}),
    Problem("ages-times", "{A} is {m} times as old as {B}. In {k} years, {A} will be {ak} years old. How old is {B} "
                          "now, and how old will {B} be then?",
            {"y": (2, 15), "m": (2, 5), "k": (1, 12), "ak": lambda v, r: v["m"] * v["y"] + v["k"]}),
    Problem("change", "{A} buys {n1} notebooks at ${p1:.2f} each and {n2} pens at ${p2:.2f} each, and pays with a "
                      "${bill} bill. How much change should {A} get?",
            {"n1": (2, 8), "p1": (1.25, 6.0, 0.25), "n2": (2, 12), "p2": (0.5, 3.0, 0.25),
             "bill": lambda v, r: next(b for b in (20, 50, 100) if b > v["n1"] * v["p1"] + v["n2"] * v["p2"])}),
    Problem("split-bill", "{n} friends have dinner together. The bill is ${total:.2f} and they want to leave a {tip}%"
                          " tip, then split everything equally. How much does each person pay?",
            {"n": (2, 9), "total": (30.0, 400.0, 0.5), "tip": (10, 25, 5)}),
    Problem("overtime", "{A} earns ${w} per hour and 1.5 times that for every hour over 40 in a week. Last week {A} "
                        "worked {h} hours. How much did {A} earn?", {"w": (12, 45), "h": (41, 60)}),
    Problem("recipe-scale", "A recipe for {s1} people needs {g} grams of flour, {e} eggs and {m} ml of milk. How much"
                            " of each is needed for {s2} people?",
            {"s1": (2, 6), "g": (150, 600, 25), "e": (2, 5), "m": (100, 600, 50),
             "s2": (3, 20)}),
    Problem("miles-km", "{A} is training for a {mi}-mile race. How many kilometres is that (1 mile is about 1.609 "
                        "km), and at {pace} minutes per kilometre, how long would the race take?",
            {"mi": (3, 26), "pace": (4.5, 8.0, 0.5)}),
    Problem("fahrenheit", "A weather app shows {f}°F. What is that in degrees Celsius? Explain the formula you use.",
            {"f": (-10, 110)}),
    Problem("flooring", "A rectangular room measures {l} m by {w} m. Flooring costs ${c} per square metre, and {A} "
                        "buys {extra}% extra to allow for cutting. What is the total cost?",
            {"l": (2.5, 9.0, 0.5), "w": (2.0, 7.0, 0.5), "c": (15, 90, 5), "extra": (5, 15, 5)}),
    Problem("circle-garden", "A circular garden has a radius of {r} m. How much fencing is needed to go around it, "
                             "and what is its area?", {"r": (1.5, 20.0, 0.5)}),
    Problem("cylinder-tank", "A cylindrical water tank has a diameter of {d} m and a height of {h} m. How many litres"
                             " does it hold when full?", {"d": (0.5, 4.0, 0.25), "h": (1.0, 5.0, 0.5)}),
    Problem("ladder", "A {l}-metre ladder leans against a wall with its foot {f} m from the wall. How high up the "
                      "wall does it reach?", {"l": (3, 12), "f": lambda v, r: round(r.uniform(0.5, v["l"] * 0.6), 1)}),
    Problem("paint-walls", "{A} wants to paint a room that is {l} m long, {w} m wide and {h} m high (walls only, no "
                           "ceiling). The door and window together cover {o} m². One can of paint covers {cov} m², "
                           "and two coats are needed. How many cans should {A} buy?",
            {"l": (3, 8), "w": (2, 6), "h": (2.4, 3.2, 0.1), "o": (2, 6), "cov": (8, 15)}),
    Problem("outfits", "{A} has {s} shirts, {p} pairs of trousers and {h} hats. An outfit is one shirt, one pair of "
                       "trousers and either one hat or no hat. How many different outfits are there?",
            {"s": (2, 9), "p": (2, 6), "h": (1, 5)}),
    Problem("handshakes", "At a meeting of {n} people, everyone shakes hands once with everyone else. How many "
                          "handshakes take place?", {"n": (4, 40)}),
    Problem("officers", "A club with {n} members must choose a president, a treasurer and a secretary, all different "
                        "people. In how many ways can it do this? And in how many ways can it choose a committee of "
                        "{k}?", {"n": (5, 25), "k": (2, 5)}),
    Problem("dice-sum", "Two fair six-sided dice are rolled. What is the probability that the sum is {s}? And that it"
                        " is at least {s}?", {"s": (3, 12)}),
    Problem("marbles", "A bag holds {r} red, {bl} blue and {g} green marbles. {A} draws two marbles without looking "
                       "and without putting the first back. What is the probability that both are {colour}?",
            {"r": (2, 10), "bl": (2, 10), "g": (2, 10), "colour": ("red", "blue", "green")}),
    Problem("test-average", "{A} scored {s1}, {s2}, {s3} and {s4} on four tests. What score does {A} need on the "
                            "fifth test to average exactly {t}?",
            {"s1": (55, 98), "s2": (55, 98), "s3": (55, 98), "s4": (55, 98),
             "t": lambda v, r: (v["s1"] + v["s2"] + v["s3"] + v["s4"] + r.randint(50, 100)) // 5}),
    Problem("ratio-share", "{A} and {B} share ${m} in the ratio {x}:{y}. How much does each get?",
            {"x": (1, 7), "y": (1, 9), "m": lambda v, r: (v["x"] + v["y"]) * r.randint(5, 200)}),
    Problem("fuel-cost", "A car uses {l} litres of fuel per 100 km, and fuel costs ${p:.2f} per litre. How much does "
                         "a {d} km round trip cost?",
            {"l": (4.5, 12.0, 0.5), "p": (1.2, 2.4, 0.05), "d": (40, 1200, 20)}),
    Problem("flight-arrival", "A flight leaves {city} at {h}:{m:02d} local time and lasts {dh} hours {dm} minutes. "
                              "The destination is {tz} hours ahead. What is the local time on arrival?",
            {"city": ("Lisbon", "Nairobi", "Toronto", "Seoul", "Lima", "Oslo", "Cairo", "Perth"), "h": (5, 22),
             "m": (0, 55, 5), "dh": (1, 13), "dm": (0, 55, 5), "tz": (2, 9)}),
    Problem("savings-goal", "{A} wants to buy a {thing} that costs ${cost}. {A} already has ${s} and saves ${w} each "
                            "week. How many weeks until {A} can afford it?",
            {"thing": ("bike", "guitar", "laptop", "camera", "skateboard", "telescope"), "cost": (120, 1500, 10),
             "s": lambda v, r: r.randint(0, v["cost"] // 2), "w": (5, 60, 5)}),
    Problem("mixture", "How many litres of a {p1}% salt solution must be mixed with {vol} litres of a {p2}% salt "
                       "solution to get a {p3}% solution?",
            {"p1": (2, 10), "p2": (20, 40), "vol": (2, 30), "p3": lambda v, r: r.randint(v["p1"] + 1, v["p2"] - 1)}),
    Problem("consecutive", "The sum of {k} consecutive whole numbers is {s}. What are the numbers?",
            {"k": (3, 5), "s": lambda v, r: v["k"] * r.randint(5, 90) + v["k"] * (v["k"] - 1) // 2}),
    Problem("boat-river", "A boat travels {d} km downstream in {t1} hours and takes {t2} hours to come back upstream."
                          " What is the speed of the boat in still water, and the speed of the current?",
            {"d": (12, 120, 6), "t1": (1, 4), "t2": lambda v, r: v["t1"] + r.randint(1, 3)}),
    Problem("workers-days", "{w1} workers can build a wall in {d1} days. Working at the same rate, how many days "
                            "would {w2} workers need?", {"w1": (2, 12), "d1": (3, 30), "w2": (2, 20)}),
    Problem("plant-growth", "A sunflower is {h} cm tall and grows {g} cm a week. A second one is {h2} cm tall and "
                            "grows {g2} cm a week. After how many weeks are they the same height?",
            {"h": (5, 40), "g": (6, 15), "g2": (1, 5),
             "h2": lambda v, r: v["h"] + (v["g"] - v["g2"]) * r.randint(2, 12)}),
    Problem("currency", "{A} changes {m} euros into US dollars at 1 euro = {rate} dollars, and the bank takes a {f}% "
                        "fee from the amount. How many dollars does {A} receive?",
            {"m": (50, 3000, 50), "rate": (1.02, 1.2, 0.01), "f": (1, 5)}),
    Problem("reading-plan", "A book has {p} pages. {A} reads {r} pages each weekday and {w} pages on each weekend "
                            "day. Starting on a Monday, on which day does {A} finish the book?",
            {"p": (120, 900, 10), "r": (10, 40, 5), "w": (20, 80, 10)}),
    Problem("class-survey", "In a class of {n} students, {p1}% walk to school, {p2}% come by bus and the rest are "
                            "driven. How many students are driven to school?",
            {"n": (20, 40, 20), "p1": (10, 50, 5), "p2": lambda v, r: 5 * r.randint(1, (90 - v["p1"]) // 5)}),
    Problem("heater-cost", "A heater uses {w} watts and runs {h} hours a day. Electricity costs ${c:.2f} per kWh. "
                           "What does it cost to run it for a {days}-day month?",
            {"w": (500, 3000, 100), "h": (1, 12), "c": (0.1, 0.45, 0.01), "days": (28, 31)}),
    Problem("map-scale", "On a map with a scale of 1:{s}, two villages are {cm} cm apart. How far apart are they in "
                         "real life, in kilometres? How long would it take to walk at {v} km/h?",
            {"s": (10000, 250000, 5000), "cm": (1.5, 20.0, 0.5), "v": (3, 6)}),
    Problem("speed-change", "{A} cycles to work at {v1} km/h and arrives {late} minutes late. Cycling at {v2} km/h "
                            "would have got {A} there exactly on time. How far is it to work?",
            {"v1": (10, 18), "v2": lambda v, r: v["v1"] + r.randint(2, 8), "late": (5, 30, 5)}),
    Problem("tiles", "A patio is {l} m by {w} m. It is paved with square tiles of side {t} cm. How many tiles are "
                     "needed, and how many boxes if each box holds {box} tiles?",
            {"l": (2, 8), "w": (2, 6), "t": (20, 60, 10), "box": (6, 20, 2)}),
    Problem("sale-profit", "A bakery sells {n} loaves a day at ${p:.2f} each. Each loaf costs ${c:.2f} to make, and "
                           "the bakery's fixed costs are ${f} a day. What is the daily profit? How many loaves must "
                           "it sell to break even?",
            {"n": (40, 400, 10), "p": (2.5, 6.0, 0.25), "c": (0.8, 2.4, 0.2), "f": (50, 600, 25)}),
)
