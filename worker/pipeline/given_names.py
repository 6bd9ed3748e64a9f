"""Common English and Czech given names: people of the asker's own project, whom the
documentation never names but whose names do not make a question unanswerable ("Can Bob see
my estimate?"). Written for names.py, in their dictionary forms; Czech case endings match by
the forms' stems (given)."""

from __future__ import annotations

ENGLISH = """
Aaron Adam Adrian Alan Albert Alex Alexander Alice Amanda Amber Amy Andrew Angela Anna Anne
Anthony Ashley Barbara Ben Benjamin Beth Betty Bill Bob Brandon Brenda Brian Bruce Carl Carol
Caroline Catherine Charles Charlie Chris Christina Christine Christopher Claire Daniel Dave David
Deborah Dennis Diana Donald Donna Dorothy Doug Douglas Dylan Ed Edward Elizabeth Ellen Emily Emma
Eric Erin Ethan Frank Gary George Grace Greg Hannah Harry Heather Helen Henry Ian Jack Jacob
James Jane Janet Jason Jeff Jennifer Jeremy Jerry Jessica Jim Joan Joe John Jonathan Joseph
Josh Joshua Joyce Judy Julia Julie Justin Karen Kate Katherine Keith Kelly Ken Kevin Kim Kyle
Larry Laura Lauren Linda Lisa Liz Lucy Luke Margaret Maria Mark Martha Mary Matt Matthew Megan
Melissa Michael Michelle Mike Nancy Natalie Nathan Nicholas Nick Nicole Olivia Oscar Pamela
Patricia Patrick Paul Peter Rachel Ralph Rebecca Richard Rob Robert Roger Ron Ronald Rose Russell
Ruth Ryan Sam Samantha Samuel Sandra Sara Sarah Scott Sean Sharon Shirley Sophie Stephanie
Stephen Steve Steven Susan Tim Timothy Tom Tony Tyler Victoria Virginia Walter William Zoe
"""

CZECH = """
Adéla Aleš Alena Alois Alžběta Andrea Aneta Anežka Antonín Barbora Blanka Bohumil Bohuslav
Božena Dagmar Dana Daniel Daniela David Denisa Dominik Dušan Eliška Emil Eva Filip František
Gabriela Hana Helena Ilona Irena Iva Ivan Ivana Jakub Jan Jana Jarmila Jaroslav Jaroslava
Jindřich Jiří Jitka Josef Kamil Karel Karolína Kateřina Klára Kristýna Ladislav Lenka Libor
Libuše Lucie Ludmila Lukáš Marcela Marek Markéta Marie Martin Martina Matěj Michaela Michal
Milan Milena Miloslav Miloš Miroslav Monika Naděžda Natálie Nikola Olga Ondřej Patrik Pavel
Pavla Pavlína Petr Petra Radek Radka Radim Renata Richard Robert Roman Růžena Simona Stanislav
Šárka Štěpán Tereza Tomáš Václav Věra Veronika Viktor Vladimír Vlasta Vojtěch Zdeněk Zdeňka
Zuzana
"""

NAMES = frozenset((ENGLISH + CZECH).split())
# How many letters a Czech case ending adds to a name's stem (Petr-ovi, Jan-ě, Ev-ou, Eliš-kou).
ENDING = 3


def _stem(name: str) -> str:
    """A name without the vowel its Czech cases replace (Eva -> Ev, Lucie -> Luci; Petr,
    Zoe stay)."""
    low = name.casefold()
    return low[:-1] if low[-1] == "a" or (len(low) > 3 and low[-1] == "e") else low


STEMS = frozenset(_stem(n) for n in NAMES)


def given(word: str) -> bool:
    """Whether the word is one of the names, in any of its forms (a stem plus at most ENDING
    letters): Bob, Petrovi, Evou, Janě."""
    low = word.casefold()
    return any(low[:k] in STEMS for k in range(max(2, len(low) - ENDING), len(low) + 1))
